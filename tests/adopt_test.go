package tests

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/gosync/gosync/gosync"
)

// TestAdoptUpstreamDatabase migrates a filled upstream 0.22 database: every
// row stays, the application table is untouched, the catalog becomes exactly
// a fresh gosync database's, and the history goes to gosync_db_version.
// Down to zero then keeps every table holding rows, and up again restores
// the fresh catalog.
func TestAdoptUpstreamDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := upstreamDB(t, true)
	cols := tableColumns(t, d.Pool)
	before := tableRows(t, d.Pool, cols)
	if !strings.Contains(before, "sync_commits: 2 rows") || !strings.Contains(before, "todos: 2 rows") {
		t.Fatalf("fixture not filled:\n%s", before)
	}
	app := appTableCatalog(t, d.Pool, "todos")

	if v, err := gosync.Migrate(ctx, d.Pool); err != nil || v != latestVersion(t) {
		t.Fatalf("migrate = %d, %v; want %d", v, err, latestVersion(t))
	}
	if after := tableRows(t, d.Pool, cols); after != before {
		t.Fatalf("rows changed by adoption:\nbefore\n%s\nafter\n%s", before, after)
	}
	if got := appTableCatalog(t, d.Pool, "todos"); got != app {
		t.Fatalf("application table changed:\n%s", lineDiff(app, got))
	}
	assertFreshCatalog(t, d)
	if v := recordedVersion(t, d.Pool, "gosync_db_version"); v != latestVersion(t) {
		t.Fatalf("gosync_db_version records %d, want %d", v, latestVersion(t))
	}
	if legacy := queryOne[*string](t, d.Pool, "SELECT to_regclass('goose_db_version')::text"); legacy != nil {
		t.Fatalf("goose_db_version = %v; gosync must not create it", *legacy)
	}
	if writerVersion := queryOne[*int64](t, d.Pool, "SELECT writer_version FROM sync_commits WHERE commit_seq = 1"); writerVersion != nil {
		t.Fatalf("adopted commit writer_version = %v; want NULL", *writerVersion)
	}

	// 00001's Down drops the sync tables: gosync refuses to roll it back
	// while they hold rows, and down to 1 keeps every row.
	p, err := gosync.NewMigrator(ctx, d.Pool)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.DownTo(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if after := tableRows(t, d.Pool, cols); after != before {
		t.Fatalf("down to 1 lost upstream rows:\nbefore\n%s\nafter\n%s", before, after)
	}
	if err := gosync.RefuseDroppingData(ctx, d.Pool); !errors.Is(err, gosync.ErrWouldDropData) || !strings.Contains(err.Error(), "sync_commits") {
		t.Fatalf("down past 1 with upstream rows: %v, want ErrWouldDropData naming sync_commits", err)
	}
	r := gosyncCLI(t, "--db", d.URL, "migrate", "down")
	wantCode(t, r, 1, "migrate down at version 1")
	if after := tableRows(t, d.Pool, cols); after != before {
		t.Fatalf("a refused migrate down lost rows:\nbefore\n%s\nafter\n%s", before, after)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	assertFreshCatalog(t, d)
	if after := tableRows(t, d.Pool, cols); after != before {
		t.Fatalf("up after down changed rows:\nbefore\n%s\nafter\n%s", before, after)
	}
}

// TestAdoptUpstream023Database: an upstream 0.23 server already created the
// barrier's tables, column and its own fence function and trigger; gosync
// replaces the function body and ends with a fresh database's catalog.
func TestAdoptUpstream023Database(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := upstreamDB(t, true)
	execFile(t, d.Pool, "testdata/upstream_0_23_additions.sql")
	if _, err := gosync.Migrate(ctx, d.Pool); err != nil {
		t.Fatal(err)
	}
	assertFreshCatalog(t, d)
}

// TestAdoptRefusesIncompatibleTables: an existing sync table gosync cannot
// use stops the migration with ErrCannotAdopt naming the table and the
// difference; no table, row or catalog entry changes and no migration is
// recorded.
func TestAdoptRefusesIncompatibleTables(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, breakIt, want string }{
		{"missing column", "ALTER TABLE sync_clients DROP COLUMN cursor",
			"sync_clients: column cursor is missing (gosync needs cursor bigint not null)"},
		{"other primary key", "ALTER TABLE sync_push_results DROP CONSTRAINT sync_push_results_pkey; " +
			"ALTER TABLE sync_push_results ADD PRIMARY KEY (partition, client_id, client_commit_id, result)",
			"sync_push_results: primary key is (partition, client_id, client_commit_id, result), gosync needs (partition, client_id, client_commit_id)"},
		{"no primary key", "ALTER TABLE sync_commits DROP CONSTRAINT sync_commits_pkey",
			"sync_commits: has no primary key, gosync needs (partition, commit_seq)"},
		{"other type", "ALTER TABLE sync_changes ALTER COLUMN scopes TYPE text",
			"sync_changes: column scopes is text not null, gosync needs jsonb not null"},
		{"nullable", "ALTER TABLE sync_partitions ALTER COLUMN max_commit_seq DROP NOT NULL",
			"sync_partitions: column max_commit_seq is bigint, gosync needs bigint not null"},
		{"required extra column", "ALTER TABLE sync_blob_refs ADD COLUMN size bigint NOT NULL DEFAULT 0; " +
			"ALTER TABLE sync_blob_refs ALTER COLUMN size DROP DEFAULT",
			"sync_blob_refs: column size is not null without a default, and gosync never writes it"},
		{"not a table", "CREATE VIEW sync_tombstones AS SELECT 1 AS x",
			"sync_tombstones is not a table (relkind v)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d := upstreamDB(t, true)
			mustExec(t, d.Pool, tc.breakIt)
			cols := tableColumns(t, d.Pool)
			rows, catalog, app := tableRows(t, d.Pool, cols), dumpWholeCatalog(t, d.Pool), appTableCatalog(t, d.Pool, "todos")

			_, err := gosync.Migrate(ctx, d.Pool)
			if !errors.Is(err, gosync.ErrCannotAdopt) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("migrate: %v\nwant ErrCannotAdopt naming %q", err, tc.want)
			}
			if got := dumpWholeCatalog(t, d.Pool); got != catalog {
				t.Fatalf("a refused adoption changed the catalog:\n%s", lineDiff(catalog, got))
			}
			if got := tableRows(t, d.Pool, cols); got != rows {
				t.Fatalf("a refused adoption changed rows:\nbefore\n%s\nafter\n%s", rows, got)
			}
			if got := appTableCatalog(t, d.Pool, "todos"); got != app {
				t.Fatalf("a refused adoption changed the application table:\n%s", lineDiff(app, got))
			}
			if versionTable := queryOne[*string](t, d.Pool, "SELECT to_regclass('gosync_db_version')::text"); versionTable != nil {
				t.Fatalf("a refused adoption created the version table %s", *versionTable)
			}
		})
	}
}

// TestAdoptWithGooseCLI: the documented plain-goose path adopts a filled
// upstream database the same way: the adoption script through psql first,
// then goose; goose down-to 1 keeps the upstream tables and their rows.
func TestAdoptWithGooseCLI(t *testing.T) {
	t.Parallel()
	goose := gooseBinary(t)
	d := upstreamDB(t, true)
	cols := tableColumns(t, d.Pool)
	before := tableRows(t, d.Pool, cols)
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	goosed := func(args ...string) {
		t.Helper()
		run(goose, append([]string{"-table", "gosync_db_version", "-dir", "../sql/migrations", "postgres", d.URL}, args...)...)
	}
	run("psql", d.URL, "-v", "ON_ERROR_STOP=1", "--single-transaction", "-q", "-f", "../sql/adopt/upstream.sql")
	goosed("up")
	assertFreshCatalog(t, d)
	goosed("down-to", "1")
	if after := tableRows(t, d.Pool, cols); after != before {
		t.Fatalf("goose down-to 1 lost upstream rows:\nbefore\n%s\nafter\n%s", before, after)
	}
	goosed("up")
	assertFreshCatalog(t, d)
}

// TestAdoptRefusalCLI: `gosync migrate up` reports a refused adoption as one
// line naming the file, the table and the difference, not goose's dump of
// the statement.
func TestAdoptRefusalCLI(t *testing.T) {
	t.Parallel()
	d := upstreamDB(t, true)
	if _, err := d.Pool.Exec(context.Background(), "ALTER TABLE sync_clients DROP COLUMN cursor"); err != nil {
		t.Fatal(err)
	}
	r := gosyncCLI(t, "--db", d.URL, "migrate", "up")
	wantCode(t, r, 1, "migrate up")
	want := "gosync: cannot adopt the existing sync tables: " +
		"sync_clients: column cursor is missing (gosync needs cursor bigint not null)"
	if !strings.HasPrefix(r.stderr, want) || strings.Contains(r.stderr, "DO $$") || strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("stderr = %q, want one line starting %q", r.stderr, want)
	}
}
