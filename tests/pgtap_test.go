package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gosync/gosync/internal/pgtest"
)

// TestPgTAP runs the DBA-facing contract in tests/sql/*.sql with pg_prove on
// a fresh migrated database. A missing pg_prove or pgTAP fails the test:
// `make deps` installs them.
func TestPgTAP(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("sql/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no pgTAP files in tests/sql: %v", err)
	}
	prove, err := exec.LookPath("pg_prove")
	if err != nil {
		t.Fatal("pg_prove not found: run `make deps` (Debian: libtap-parser-sourcehandler-pgtap-perl)")
	}
	d := pgtest.New(t)
	if _, err := d.Pool.Exec(context.Background(), "CREATE EXTENSION pgtap"); err != nil {
		t.Fatalf("CREATE EXTENSION pgtap (run `make deps`): %v", err)
	}
	// pg_prove hands its connection to psql piecemeal and does not take a
	// URL, so the connection travels in libpq's environment variables.
	cfg, err := pgx.ParseConfig(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(prove, append([]string{"--verbose"}, files...)...)
	cmd.Env = append(os.Environ(), "PGHOST="+cfg.Host, fmt.Sprintf("PGPORT=%d", cfg.Port),
		"PGUSER="+cfg.User, "PGPASSWORD="+cfg.Password, "PGDATABASE="+cfg.Database)
	out, err := cmd.CombinedOutput()
	t.Logf("pg_prove:\n%s", out)
	if err != nil {
		t.Fatalf("pg_prove failed: %v", err)
	}
	if !regexp.MustCompile(`(?m)^Result: PASS$`).Match(out) {
		t.Fatal("pg_prove did not report PASS")
	}
}
