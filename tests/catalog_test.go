package tests

import (
	"os"
	"strings"
	"testing"

	"github.com/gosync/gosync/internal/pgtest"
)

// TestCatalogMatchesDesign reads pg_catalog after migrating and compares it,
// line for line, with testdata/catalog.txt: every table, column, type,
// nullability, default, primary key, CHECK constraint, secondary index (with
// its column order) and the writer fence trigger.
func TestCatalogMatchesDesign(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	raw, err := os.ReadFile("testdata/catalog.txt")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if !strings.HasPrefix(line, "# ") {
			want = append(want, line)
		}
	}
	got := dumpWholeCatalog(t, db.Pool)
	got = got[:strings.Index(got, "## functions")]
	if g, w := strings.TrimSpace(got), strings.Join(want, "\n"); g != w {
		t.Errorf("catalog differs from testdata/catalog.txt (the tables of DESIGN.md section 2):\n%s", lineDiff(w, g))
	}
}
