package tests

// Read-only verbs write nothing, and the migration lock's wait is bounded
// and names its holder (issue 17, section 6).

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pressly/goose/v3/lock"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// wholeDatabase is everything a write could change in the current schema:
// every relation with its kind, owner and grants, every column, trigger
// (with its state) and function (definition, owner, grants), and every
// table's rows (version tables included).
func wholeDatabase(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	catalog := queryLines(t, pool, `
		SELECT format('relation %s %s owner %s acl %s', c.relname, c.relkind, pg_get_userbyid(c.relowner), coalesce(c.relacl::text, '-'))
		  FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace
		UNION ALL
		SELECT format('column %s.%s %s %s', c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull)
		  FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
		 WHERE c.relnamespace = current_schema()::regnamespace
		UNION ALL
		SELECT format('trigger %s %s %s', t.tgname, t.tgenabled, pg_get_triggerdef(t.oid))
		  FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
		 WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace
		UNION ALL
		SELECT format('function %s owner %s acl %s %s', p.oid::regprocedure, pg_get_userbyid(p.proowner),
		              coalesce(p.proacl::text, '-'), md5(pg_get_functiondef(p.oid)))
		  FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace AND p.prokind <> 'a'
		ORDER BY 1`)
	var b strings.Builder
	b.WriteString(catalog + "\n")
	tables := queryLines(t, pool, `SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace AND relkind = 'r' ORDER BY 1`)
	for _, name := range strings.Fields(tables) {
		rows := queryLines(t, pool, fmt.Sprintf("SELECT t::text FROM %s t ORDER BY 1", pgx.Identifier{name}.Sanitize()))
		fmt.Fprintf(&b, "rows of %s:\n%s\n", name, rows)
	}
	return b.String()
}

// TestReadOnlyVerbsWriteNothing: constructing a migrator, Status,
// GetVersions, GetDBVersion, and `gosync migrate status`, `migrate version`
// and `status` leave the catalog and every row exactly as they were, on an
// upstream 0.23 database not yet adopted (before: `migrate status` adopted
// it and dropped its fence trigger), on a database whose history is in
// goose_db_version (before: carried over), and on an empty one (goose
// created its version table). The answers are what Up would record.
func TestReadOnlyVerbsWriteNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	latest := latestVersion(t)
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T) *pgtest.DB
		version int64
	}{
		{"upstream 0.23 not adopted", func(t *testing.T) *pgtest.DB {
			d := upstreamDB(t, true)
			execFile(t, d.Pool, "testdata/upstream_0_23_additions.sql")
			return d
		}, 0},
		{"history in goose_db_version", legacyGosyncDB, latest},
		{"empty", func(t *testing.T) *pgtest.DB { return pgtest.NewEmpty(t) }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := tc.setup(t)
			want := tc.version
			before := wholeDatabase(t, d.Pool)

			m, err := gosync.NewMigrator(ctx, d.Pool)
			if err != nil {
				t.Fatal(err)
			}
			statuses, err := m.Status(ctx)
			if err != nil {
				t.Fatal(err)
			}
			applied := 0
			for _, s := range statuses {
				if !s.AppliedAt.IsZero() {
					applied++
				}
			}
			current, target, err := m.GetVersions(ctx)
			if err != nil || current != want || target != latest {
				t.Fatalf("GetVersions = %d, %d, %v; want %d, %d", current, target, err, want, latest)
			}
			if v, err := m.GetDBVersion(ctx); err != nil || v != want {
				t.Fatalf("GetDBVersion = %d, %v; want %d", v, err, want)
			}
			if want == latest && applied != len(statuses) {
				t.Fatalf("status lists %d of %d applied; want all", applied, len(statuses))
			}
			if want == 0 && applied != 0 {
				t.Fatalf("status lists %d applied; want none", applied)
			}
			m.Close()
			for _, args := range [][]string{{"migrate", "status"}, {"migrate", "version"}, {"migrate", "status", "--json"}, {"status"}} {
				r := gosyncCLI(t, append(args, "--db", d.URL)...)
				if r.code != 0 && !(args[0] == "status" && want < latest) {
					t.Fatalf("gosync %v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
				}
			}
			if after := wholeDatabase(t, d.Pool); after != before {
				t.Fatalf("a read-only verb wrote:\n%s", lineDiff(before, after))
			}
		})
	}
}

// preparedLockHolder holds goose's migration lock in a prepared transaction
// as a login with no sync role (advisory locks need no privilege) and
// returns its gid and role; the transaction is rolled back when t ends.
func preparedLockHolder(t *testing.T, d *pgtest.DB) (gid, role string) {
	t.Helper()
	ctx := context.Background()
	u, role := loginURL(t, d, "")
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	gid = "held-" + d.Name
	for _, sql := range []string{"BEGIN", fmt.Sprintf("SELECT pg_advisory_xact_lock(%d)", lock.DefaultLockID),
		"PREPARE TRANSACTION '" + gid + "'"} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	t.Cleanup(func() { _, _ = d.Pool.Exec(context.Background(), "ROLLBACK PREPARED '"+gid+"'") })
	return gid, role
}

// TestMigrationLockHeldByPreparedTransaction: a prepared transaction holding
// the migration lock (it survives restarts, and nobody's session ends it)
// made `migrate up` wait for goose's five minutes and fail without a name.
// Now Up fails at once, naming the gid, its owner and what to run, and
// changes nothing; the command says the same; after ROLLBACK PREPARED it
// migrates.
func TestMigrationLockHeldByPreparedTransaction(t *testing.T) {
	t.Parallel()
	d := pgtest.NewEmpty(t)
	gid, role := preparedLockHolder(t, d)
	before := wholeDatabase(t, d.Pool)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := gosync.Migrate(ctx, d.Pool)
	var lockErr *gosync.MigrationLockError
	if !errors.Is(err, gosync.ErrMigrationLockBusy) || !errors.As(err, &lockErr) {
		t.Fatalf("migrate under a prepared lock holder: %v; want *MigrationLockError", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("waited %s for a prepared transaction, which never ends by itself", took)
	}
	if len(lockErr.Holders) != 1 || lockErr.Holders[0].PreparedGID != gid || lockErr.Holders[0].Role != role {
		t.Fatalf("holders = %+v; want prepared transaction %s of %s", lockErr.Holders, gid, role)
	}
	if want := "ROLLBACK PREPARED '" + gid + "'"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not say %s", err, want)
	}
	r := gosyncCLI(t, "migrate", "up", "--db", d.URL, "--lock-timeout", "10s")
	wantCode(t, r, 1, "migrate up")
	if !strings.Contains(r.stderr, "prepared transaction '"+gid+"' (owner "+role) || !strings.Contains(r.stderr, "ROLLBACK PREPARED") {
		t.Fatalf("gosync migrate up: %s", r.stderr)
	}
	if after := wholeDatabase(t, d.Pool); after != before {
		t.Fatalf("a refused migration wrote:\n%s", lineDiff(before, after))
	}
	mustExec(t, d.Pool, "ROLLBACK PREPARED '"+gid+"'")
	if v, err := gosync.Migrate(ctx, d.Pool); err != nil || v != latestVersion(t) {
		t.Fatalf("migrate after ROLLBACK PREPARED: %d, %v", v, err)
	}
}

// TestMigrationLockHeldBySession: a live session holding the lock is waited
// for up to the lock timeout, then named (pid, role); a holder that lets go
// within the timeout is simply waited for.
func TestMigrationLockHeldBySession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	u, role := loginURL(t, d, "")
	holder, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	var pid int64
	if err := holder.QueryRow(ctx, "SELECT pg_backend_pid() FROM (SELECT pg_advisory_lock($1)) l", lock.DefaultLockID).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = gosync.Migrate(ctx, d.Pool, gosync.WithLockTimeout(700*time.Millisecond))
	var lockErr *gosync.MigrationLockError
	if !errors.As(err, &lockErr) || len(lockErr.Holders) != 1 || lockErr.Holders[0].PID != pid || lockErr.Holders[0].Role != role {
		t.Fatalf("migrate: %v; want the lock error naming pid %d (%s)", err, pid, role)
	}
	if took := time.Since(start); took < 700*time.Millisecond || took > 5*time.Second {
		t.Fatalf("gave up after %s; want the 700ms lock timeout", took)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("pg_terminate_backend(%d)", pid)) {
		t.Fatalf("error %q does not say what to do", err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		_, _ = holder.Exec(ctx, "SELECT pg_advisory_unlock_all()")
	}()
	if _, err := gosync.Migrate(ctx, d.Pool, gosync.WithLockTimeout(10*time.Second)); err != nil {
		t.Fatalf("migrate once the holder let go: %v", err)
	}
}
