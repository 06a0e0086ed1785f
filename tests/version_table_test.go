package tests

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
	sqlfiles "github.com/gosync/gosync/sql"
)

// appMigrations are an application's own goose migrations, recorded in
// goose's default table goose_db_version.
var appMigrations = fstest.MapFS{
	"00001_accounts.sql": {Data: []byte("-- +goose Up\nCREATE TABLE accounts (id text PRIMARY KEY);\n" +
		"-- +goose Down\nDROP TABLE accounts;\n")},
	"00002_account_name.sql": {Data: []byte("-- +goose Up\nALTER TABLE accounts ADD COLUMN name text;\n" +
		"-- +goose Down\nALTER TABLE accounts DROP COLUMN name;\n")},
	"00003_account_name_index.sql": {Data: []byte("-- +goose Up\nCREATE INDEX accounts_name ON accounts (name);\n" +
		"-- +goose Down\nDROP INDEX accounts_name;\n")},
}

// history is a goose version table's rows, exactly.
func history(t *testing.T, pool *pgxpool.Pool, table string) string {
	t.Helper()
	return queryLines(t, pool, "SELECT format('%s %s %s %s', id, version_id, is_applied, tstamp) FROM "+
		pgx.Identifier{table}.Sanitize()+" ORDER BY id")
}

// legacyGosyncDB is a database migrated by an earlier gosync build: its
// history in goose's default table.
func legacyGosyncDB(t *testing.T) *pgtest.DB {
	t.Helper()
	d := pgtest.NewEmpty(t)
	if _, err := gosync.Migrate(context.Background(), d.Pool, gosync.WithVersionTable("goose_db_version")); err != nil {
		t.Fatal(err)
	}
	return d
}

func assertHistory(t *testing.T, pool *pgxpool.Pool, table, want string) {
	t.Helper()
	if got := history(t, pool, table); got != want {
		t.Fatalf("%s changed:\nbefore\n%s\nafter\n%s", table, want, got)
	}
}

// TestAppGooseHistoryUntouched: an application with three goose migrations
// of its own in goose_db_version; `gosync migrate up`, `status`, `down`,
// `up` record gosync's migrations in gosync_db_version, show only gosync's
// files, and never change the application's history or tables.
func TestAppGooseHistoryUntouched(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.NewEmpty(t)
	app, err := goose.NewProvider(goose.DialectPostgres, stdlib.OpenDBFromPool(d.Pool), appMigrations)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if _, err := app.Up(ctx); err != nil {
		t.Fatal(err)
	}
	appHistory := history(t, d.Pool, "goose_db_version")
	accounts := appTableCatalog(t, d.Pool, "accounts")
	untouched := func(step string) {
		t.Helper()
		assertHistory(t, d.Pool, "goose_db_version", appHistory)
		if got := appTableCatalog(t, d.Pool, "accounts"); got != accounts {
			t.Fatalf("after %s the application's table changed:\n%s", step, lineDiff(accounts, got))
		}
	}
	type status struct {
		Version int64  `json:"version"`
		File    string `json:"file"`
		Applied bool   `json:"applied"`
	}
	wantStatus := func(step string, applied int64) {
		t.Helper()
		r := gosyncCLI(t, "--db", d.URL, "migrate", "status", "--json")
		wantCode(t, r, 0, "migrate status")
		var rows []status
		r.json(t, &rows)
		// gosync's migrations, in order (numbers may skip: each branch of a
		// change takes its own).
		files, err := fs.Glob(sqlfiles.Migrations(), "*.sql")
		if err != nil || len(rows) != len(files) {
			t.Fatalf("after %s status lists %d migrations, want gosync's %d (%v): %+v", step, len(rows), len(files), err, rows)
		}
		for i, s := range rows {
			if s.File != files[i] || !strings.HasPrefix(s.File, fmt.Sprintf("%05d_", s.Version)) || strings.Contains(s.File, "account") ||
				s.Applied != (s.Version <= applied) {
				t.Fatalf("after %s status row %d = %+v; want gosync's migration %s, applied %v", step, i, s, files[i], s.Version <= applied)
			}
		}
	}

	r := gosyncCLI(t, "--db", d.URL, "migrate", "up")
	wantCode(t, r, 0, "migrate up")
	untouched("migrate up")
	if v := recordedVersion(t, d.Pool, "gosync_db_version"); v != latestVersion(t) {
		t.Fatalf("gosync_db_version records %d, want %d", v, latestVersion(t))
	}
	wantStatus("migrate up", latestVersion(t))
	untouched("migrate status")
	wantCode(t, gosyncCLI(t, "--db", d.URL, "migrate", "down"), 0, "migrate down")
	untouched("migrate down")
	wantStatus("migrate down", latestVersion(t)-1)
	wantCode(t, gosyncCLI(t, "--db", d.URL, "migrate", "up"), 0, "migrate up")
	untouched("migrate up again")
	wantStatus("migrate up again", latestVersion(t))
	if v, err := app.GetDBVersion(ctx); err != nil || v != 3 {
		t.Fatalf("the application's goose version = %d, %v; want 3", v, err)
	}
}

// TestLegacyHistoryCarriedOver: a database migrated by an earlier gosync
// build (its history in goose_db_version, with log rows) is recognised: the
// history is copied into gosync_db_version, nothing is migrated twice,
// goose_db_version is left as it was, and the catalog is a fresh one's.
func TestLegacyHistoryCarriedOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := legacyGosyncDB(t)
	mustExec(t, d.Pool, "SELECT sync_append_commit('p1', 'c1', 'cc1', 'a', 0, 1, '{}', '{}', '{}', '{}', '{}', '{}')")
	legacy := history(t, d.Pool, "goose_db_version")
	cols := tableColumns(t, d.Pool)
	rows := tableRows(t, d.Pool, cols)

	p, err := gosync.NewMigrator(ctx, d.Pool)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if results, err := p.Up(ctx); err != nil || len(results) != 0 {
		t.Fatalf("up on a carried-over database applied %d migrations, %v; want none", len(results), err)
	}
	// Same versions, flags and times, in the same order (ids are the new table's).
	strip := func(h string) string {
		var out []string
		for _, l := range strings.Split(h, "\n") {
			out = append(out, l[strings.Index(l, " ")+1:])
		}
		return strings.Join(out, "\n")
	}
	if got := strip(history(t, d.Pool, "gosync_db_version")); got != strip(legacy) {
		t.Fatalf("carried-over history differs:\nwant\n%s\ngot\n%s", strip(legacy), got)
	}
	assertHistory(t, d.Pool, "goose_db_version", legacy)
	if got := tableRows(t, d.Pool, cols); got != rows {
		t.Fatalf("rows changed:\nbefore\n%s\nafter\n%s", rows, got)
	}
	assertFreshCatalog(t, d)

	// A second migrator finds gosync_db_version and copies nothing again.
	if _, err := gosync.Migrate(ctx, d.Pool); err != nil {
		t.Fatal(err)
	}
	if got := strip(history(t, d.Pool, "gosync_db_version")); got != strip(legacy) {
		t.Fatalf("history copied twice:\n%s", got)
	}
}

// TestAppHistoryNotTakenForGosyncs: goose_db_version holding versions that
// are not gosync's is never copied, even on a database with gosync objects;
// gosync then refuses to run its migrations a second time.
func TestAppHistoryNotTakenForGosyncs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := legacyGosyncDB(t)
	mustExec(t, d.Pool, "INSERT INTO goose_db_version (version_id, is_applied) VALUES (20240101120000, true)")
	legacy := history(t, d.Pool, "goose_db_version")
	// Nothing carried over, and not migrated twice either: the adoption
	// step sees gosync's objects without their history and refuses.
	if _, err := gosync.NewMigrator(ctx, d.Pool); err == nil || !strings.Contains(err.Error(), "gosync: its migrations already ran on this database") {
		t.Fatalf("migrator: %v, want the adoption refusal", err)
	}
	if versionTable := queryOne[*string](t, d.Pool, "SELECT to_regclass('gosync_db_version')::text"); versionTable != nil {
		t.Fatalf("gosync_db_version = %v; want none (nothing carried over)", *versionTable)
	}
	assertHistory(t, d.Pool, "goose_db_version", legacy)
}

// TestVersionTableOption: WithVersionTable (and the command's
// --version-table) records gosync's history where asked; a name that is not
// a plain identifier is refused before anything.
func TestVersionTableOption(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.NewEmpty(t)
	if _, err := gosync.Migrate(ctx, d.Pool, gosync.WithVersionTable("sync_tool_versions")); err != nil {
		t.Fatal(err)
	}
	if v := recordedVersion(t, d.Pool, "sync_tool_versions"); v != latestVersion(t) {
		t.Fatalf("sync_tool_versions records %d, want %d", v, latestVersion(t))
	}
	r := gosyncCLI(t, "--db", d.URL, "--version-table", "sync_tool_versions", "migrate", "version")
	wantCode(t, r, 0, "--version-table sync_tool_versions migrate version")
	if strings.TrimSpace(r.stdout) != fmt.Sprint(latestVersion(t)) {
		t.Fatalf("gosync --version-table sync_tool_versions migrate version = %q, want %d", r.stdout, latestVersion(t))
	}
	r = gosyncCLI(t, "--db", d.URL, "--version-table", "x;y", "migrate", "status")
	wantCode(t, r, 1, "--version-table x;y migrate status")
	if !strings.Contains(r.stderr, "invalid argument: version table") {
		t.Fatalf("stderr = %q, want the refused version table", r.stderr)
	}
	for _, bad := range []string{"", "Gosync", "x; DROP TABLE sync_commits", "public.versions", strings.Repeat("v", 64)} {
		if _, err := gosync.NewMigrator(ctx, d.Pool, gosync.WithVersionTable(bad)); !errors.Is(err, gosync.ErrInvalidArgument) {
			t.Fatalf("version table %q: %v, want ErrInvalidArgument", bad, err)
		}
	}
	if n := queryOne[int](t, d.Pool, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE '%version%'"); n != 1 {
		t.Fatalf("version tables = %d; want only sync_tool_versions", n)
	}
}

// TestLegacyHistoryPlainGoose: the plain goose command on a database an
// earlier gosync build migrated is refused by 00001 (its tables exist)
// before it changes anything; `gosync migrate up` then carries the history over
// (goose's version-0 row already in gosync_db_version), and the plain goose
// command finds nothing to do.
func TestLegacyHistoryPlainGoose(t *testing.T) {
	t.Parallel()
	gooseCLI := gooseBinary(t)
	d := legacyGosyncDB(t)
	legacy := history(t, d.Pool, "goose_db_version")
	catalog := dumpWholeCatalog(t, d.Pool)
	plainGoose := func() (string, error) {
		out, err := exec.Command(gooseCLI, "-table", "gosync_db_version", "-dir", "../sql/migrations", "postgres", d.URL, "up").CombinedOutput()
		return string(out), err
	}
	if out, err := plainGoose(); err == nil || !strings.Contains(out, "already exists") {
		t.Fatalf("plain goose on a legacy database: %v\n%s\nwant 00001 refused (its tables exist)", err, out)
	}
	if got := dumpWholeCatalog(t, d.Pool); got != catalog {
		t.Fatalf("the refused run changed the catalog:\n%s", lineDiff(catalog, got))
	}
	if v := recordedVersion(t, d.Pool, "gosync_db_version"); v != 0 {
		t.Fatalf("the refused run recorded version %d", v)
	}
	r := gosyncCLI(t, "--db", d.URL, "migrate", "up")
	wantCode(t, r, 0, "migrate up")
	if !strings.Contains(r.stdout, "no pending migrations") {
		t.Fatalf("migrate up on a legacy database ran migrations:\n%s", r.stdout)
	}
	if v := recordedVersion(t, d.Pool, "gosync_db_version"); v != latestVersion(t) {
		t.Fatalf("gosync_db_version records %d after the carry-over, want %d", v, latestVersion(t))
	}
	if out, err := plainGoose(); err != nil || !strings.Contains(out, "no migrations to run") {
		t.Fatalf("plain goose after the carry-over: %v\n%s", err, out)
	}
	assertHistory(t, d.Pool, "goose_db_version", legacy)
	assertFreshCatalog(t, d)
}
