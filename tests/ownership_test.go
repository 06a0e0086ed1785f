package tests

// Ownership (issue 17, section 2): after `migrate up` every object gosync
// relies on belongs to one owner role; up refuses, changing nothing, to
// build on an object under a gosync name that another role owns, in a schema
// another role owns, or on upstream objects it cannot take.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

func ident(s string) string { return pgx.Identifier{s}.Sanitize() }

// notOwnedBy lists the objects under gosync names (and the version table)
// in the current schema that owner does not own.
func notOwnedBy(t *testing.T, pool *pgxpool.Pool, owner string) string {
	t.Helper()
	return queryLines(t, pool, `
		SELECT format('%s (owner %s)', c.relname, pg_get_userbyid(c.relowner)) FROM pg_class c
		 WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'v', 'S', 'p', 'm')
		   AND (c.relname LIKE 'sync\_%' OR c.relname LIKE 'syncular\_%' OR c.relname LIKE 'gosync\_db\_version%')
		   AND pg_get_userbyid(c.relowner) <> $1
		UNION ALL
		SELECT format('%s (owner %s)', p.oid::regprocedure, pg_get_userbyid(p.proowner)) FROM pg_proc p
		 WHERE p.pronamespace = current_schema()::regnamespace
		   AND (p.proname LIKE 'sync\_%' OR p.proname LIKE 'syncular\_%') AND pg_get_userbyid(p.proowner) <> $1
		ORDER BY 1`, owner)
}

// newRole creates role name (attrs: e.g. "NOLOGIN CREATEROLE"), dropped with
// what it owns when t ends.
func newRole(t *testing.T, d *pgtest.DB, name, attrs string) {
	t.Helper()
	mustExec(t, d.Pool, "CREATE ROLE "+ident(name)+" "+attrs)
	t.Cleanup(func() {
		_, _ = d.Pool.Exec(context.Background(), "DROP OWNED BY "+ident(name)+"; DROP ROLE "+ident(name))
	})
}

// upstreamOwnedBy builds the filled upstream 0.23 fixture as login u (which
// gets CREATE on public, as upstream's login has to create its tables).
func upstreamOwnedBy(t *testing.T, d *pgtest.DB, u *pgxpool.Pool, name string) {
	t.Helper()
	mustExec(t, d.Pool, "GRANT CREATE ON SCHEMA public TO "+ident(name))
	execFile(t, u, "testdata/upstream_0_22.sql")
	execFile(t, u, "testdata/upstream_0_22_rows.sql")
	execFile(t, u, "testdata/upstream_0_23_additions.sql")
}

// TestRedTeamPrecreatedFunction: a login with CREATE on the schema plants a
// function under a gosync name before the first `migrate up`. Before, a
// superuser's migration succeeded on top of it (CREATE OR REPLACE keeps the
// owner), and the planter could rewrite it later. Now gosync.Migrate refuses
// before running anything, naming the function and its owner, and the goose
// CLI fails at 00017 naming it too.
func TestRedTeamPrecreatedFunction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.NewEmpty(t)
	mallory := loginAs(t, d, "", nil)
	name := d.Name + "_nobody"
	mustExec(t, d.Pool, "GRANT CREATE ON SCHEMA public TO "+ident(name))
	mustExec(t, mallory, "CREATE FUNCTION sync_now_ms() RETURNS bigint LANGUAGE sql AS 'SELECT 0::bigint'")
	before := wholeDatabase(t, d.Pool)

	_, err := gosync.Migrate(ctx, d.Pool)
	if !errors.Is(err, gosync.ErrForeignOwner) || !strings.Contains(err.Error(), "function sync_now_ms() (owner "+name+")") {
		t.Fatalf("migrate over a planted function: %v; want ErrForeignOwner naming sync_now_ms() and %s", err, name)
	}
	if after := wholeDatabase(t, d.Pool); after != before {
		t.Fatalf("a refused migration wrote:\n%s", lineDiff(before, after))
	}
	r := gosyncCLI(t, "migrate", "up", "--db", d.URL)
	wantCode(t, r, 1, "migrate up")
	if !strings.Contains(r.stderr, "sync_now_ms() (owner "+name+")") || !strings.Contains(r.stderr, "ALTER FUNCTION") {
		t.Fatalf("gosync migrate up: %s", r.stderr)
	}

	// The plain goose CLI runs 00001-00016 and fails loudly at 00017.
	cmd := exec.Command(gooseBinary(t), "-table", "gosync_db_version", "-dir", "../sql/migrations", "postgres", d.URL, "up")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "00017_ownership.sql") || !strings.Contains(string(out), "sync_now_ms() (owner "+name+")") {
		t.Fatalf("goose up over a planted function: %v\n%s", err, out)
	}
	if n := queryOne[int64](t, d.Pool, "SELECT count(*) FROM gosync_db_version WHERE version_id = 17"); n != 0 {
		t.Fatal("goose recorded 00017 over a planted function")
	}
}

// TestRedTeamDatabaseOwner: `CREATE DATABASE app OWNER app`, app a
// sync_writer. On Postgres 15 the database owner owns `public`, so app can
// drop gosync's functions (DROP ... CASCADE takes the fence trigger along).
// Before, `migrate up` installed the barrier there silently. Now it refuses,
// naming the schema's owner and what to run, changing nothing; with the
// schema given to the owner role, the database owner cannot drop the fence;
// WithForeignSchemaOwner accepts the risk, which is real.
func TestRedTeamDatabaseOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, accept := range []bool{false, true} {
		t.Run(fmt.Sprintf("accept=%v", accept), func(t *testing.T) {
			t.Parallel()
			d := pgtest.NewEmpty(t)
			app := loginAs(t, d, "sync_writer", nil)
			name := d.Name + "_sync_writer"
			mustExec(t, d.Pool, "ALTER DATABASE "+ident(d.Name)+" OWNER TO "+ident(name))
			t.Cleanup(func() {
				_, _ = d.Pool.Exec(context.Background(), "ALTER DATABASE "+ident(d.Name)+" OWNER TO CURRENT_USER")
			})
			dropFence := "DROP FUNCTION syncular_writer_fence() CASCADE"
			if accept {
				if _, err := gosync.Migrate(ctx, d.Pool, gosync.WithForeignSchemaOwner()); err != nil {
					t.Fatal(err)
				}
				// The audit names the risk accepted ...
				assertRed(t, d.Pool, "the sync schema and public belong to the owner role", "public")
				// ... and what the refusal is about: the database owner
				// switches the fence off, which the audit sees too.
				mustExec(t, app, dropFence)
				failing := joinRows(failingRows(t, d.Pool))
				for _, check := range []string{"fence trigger present", "every recorded object exists"} {
					if !strings.Contains(failing, check) {
						t.Errorf("after the database owner dropped the fence, no failing %q row:\n%s", check, failing)
					}
				}
				return
			}
			before := wholeDatabase(t, d.Pool)
			_, err := gosync.Migrate(ctx, d.Pool)
			if !errors.Is(err, gosync.ErrSchemaOwner) || !strings.Contains(err.Error(), "schema public is owned by "+name) {
				t.Fatalf("migrate into a schema %s owns: %v; want ErrSchemaOwner naming it", name, err)
			}
			r := gosyncCLI(t, "migrate", "up", "--db", d.URL)
			wantCode(t, r, 1, "migrate up")
			if !strings.Contains(r.stderr, "ALTER SCHEMA public OWNER TO") {
				t.Fatalf("gosync migrate up does not say what to run: %s", r.stderr)
			}
			if after := wholeDatabase(t, d.Pool); after != before {
				t.Fatalf("a refused migration wrote:\n%s", lineDiff(before, after))
			}

			// The recommended deployment: the schema is the owner role's.
			mustExec(t, d.Pool, "ALTER SCHEMA public OWNER TO CURRENT_USER")
			if _, err := gosync.Migrate(ctx, d.Pool); err != nil {
				t.Fatal(err)
			}
			if _, err := app.Exec(ctx, dropFence); sqlState(err) != "42501" {
				t.Fatalf("the database owner dropping the fence function: %v; want 42501", err)
			}
			if n := queryOne[int64](t, d.Pool, "SELECT count(*) FROM pg_trigger WHERE tgname = 'sync_commits_writer_fence'"); n != 1 {
				t.Fatal("the fence trigger is gone")
			}
		})
	}
}

// TestRedTeamAdoptedOwner: an upstream server's login created the tables
// and the fence function. Before, adoption left them its own: it could lower
// fences, rewrite changes, activate checkpoints, replace the fence body or
// disable the trigger. Now the owner role takes every one of them, and each
// attempt is refused (42501), changing nothing.
func TestRedTeamAdoptedOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.NewEmpty(t)
	up := loginAs(t, d, "", nil)
	upstreamOwnedBy(t, d, up, d.Name+"_nobody")
	if _, err := gosync.Migrate(ctx, d.Pool); err != nil {
		t.Fatal(err)
	}
	me := queryOne[string](t, d.Pool, "SELECT current_user::text")
	if foreign := notOwnedBy(t, d.Pool, me); foreign != "" {
		t.Fatalf("after adoption, not the owner role's:\n%s", foreign)
	}
	before := wholeDatabase(t, d.Pool)
	for _, attack := range []string{
		"UPDATE sync_writer_fence SET required_writer_version = 0",
		"DELETE FROM sync_writer_fence",
		"UPDATE sync_changes SET payload = NULL",
		"INSERT INTO sync_backfill_checkpoints VALUES ('p1', 'x', 2, 'activated', 0, 0, 0, 0)",
		"CREATE OR REPLACE FUNCTION syncular_writer_fence() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NEW; END'",
		"ALTER TABLE sync_commits DISABLE TRIGGER sync_commits_writer_fence",
		"DROP TRIGGER sync_commits_writer_fence ON sync_commits",
	} {
		if _, err := up.Exec(ctx, attack); sqlState(err) != "42501" {
			t.Errorf("upstream login: %s: %v; want 42501", attack, err)
		}
	}
	if after := wholeDatabase(t, d.Pool); after != before {
		t.Fatalf("an attack changed the database:\n%s", lineDiff(before, after))
	}
}

// TestRedTeamAdoptionCannotTakeOwnership: the migrating login is neither a
// superuser nor a member of the upstream tables' owner. Before, adoption
// committed and 00002 then failed half-way. Now up refuses before anything,
// naming the objects, their owner and what to run.
func TestRedTeamAdoptionCannotTakeOwnership(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.NewEmpty(t)
	up := loginAs(t, d, "", nil)
	upName := d.Name + "_nobody"
	upstreamOwnedBy(t, d, up, upName)
	migrator := loginAs(t, d, "sync_reader", nil)
	migName := d.Name + "_sync_reader"
	mustExec(t, d.Pool, "GRANT CREATE ON SCHEMA public TO "+ident(migName))
	before := wholeDatabase(t, d.Pool)

	_, err := gosync.Migrate(ctx, migrator)
	if !errors.Is(err, gosync.ErrCannotTakeOwnership) || !strings.Contains(err.Error(), "sync_commits (owner "+upName+")") ||
		!strings.Contains(err.Error(), "GRANT "+upName+" TO "+migName) {
		t.Fatalf("migrate as a non-member: %v; want ErrCannotTakeOwnership naming sync_commits, %s and the GRANT", err, upName)
	}
	if after := wholeDatabase(t, d.Pool); after != before {
		t.Fatalf("a refused adoption wrote:\n%s", lineDiff(before, after))
	}
}

// TestOwnerRole: the recommended deployment. A NOLOGIN owner role owns the
// schema; a superuser migrates WithOwner (the CLI's --owner, the goose
// CLI's PGOPTIONS='-c role=...'), and every gosync object, the version
// table included, is the owner role's. An upstream server's login, a member
// of the owner role, still runs its start-up DDL, and migrating again
// finds nothing foreign. WithOwner for a role the login is not a member of
// is refused.
func TestOwnerRole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, via := range []string{"go", "cli", "goose"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			d := pgtest.NewEmpty(t)
			owner := d.Name + "_owner"
			newRole(t, d, owner, "NOLOGIN CREATEROLE")
			mustExec(t, d.Pool, "ALTER SCHEMA public OWNER TO "+ident(owner))
			t.Cleanup(func() { _, _ = d.Pool.Exec(context.Background(), "ALTER SCHEMA public OWNER TO pg_database_owner") })
			switch via {
			case "go":
				if _, err := gosync.Migrate(ctx, d.Pool, gosync.WithOwner(owner)); err != nil {
					t.Fatal(err)
				}
			case "cli":
				wantCode(t, gosyncCLI(t, "migrate", "up", "--db", d.URL, "--owner", owner), 0, "migrate up --owner")
			case "goose":
				cmd := exec.Command(gooseBinary(t), "-table", "gosync_db_version", "-dir", "../sql/migrations", "postgres", d.URL, "up")
				cmd.Env = append(os.Environ(), "PGOPTIONS=-c role="+owner)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("goose up as %s: %v\n%s", owner, err, out)
				}
			}
			if foreign := notOwnedBy(t, d.Pool, owner); foreign != "" {
				t.Fatalf("not the owner role's:\n%s", foreign)
			}
			if via != "go" {
				return
			}
			// Upstream's start-up: 0.22's CREATE TABLE/INDEX IF NOT EXISTS
			// and ALTER TABLE ... ADD COLUMN IF NOT EXISTS, then 0.23's fence
			// function and trigger.
			upstream := loginAs(t, d, owner, nil)
			execFile(t, upstream, "testdata/upstream_0_22.sql")
			execFile(t, upstream, "testdata/upstream_0_23_additions.sql")
			if _, err := gosync.Migrate(ctx, d.Pool, gosync.WithOwner(owner)); err != nil {
				t.Fatalf("migrate after the upstream server's start-up: %v", err)
			}
			if foreign := notOwnedBy(t, d.Pool, owner); foreign != "" {
				t.Fatalf("after upstream's start-up, not the owner role's:\n%s", foreign)
			}
			writer := loginAs(t, d, "sync_writer", nil)
			if _, err := upstreamPush(ctx, writer, "cc-owner", v(1)); err != nil {
				t.Fatalf("a sync_writer push: %v", err)
			}
			if _, err := gosync.Migrate(ctx, d.Pool); !errors.Is(err, gosync.ErrSchemaOwner) || !strings.Contains(err.Error(), "--owner "+owner) {
				t.Fatalf("migrate without the owner role: %v; want ErrSchemaOwner suggesting --owner %s", err, owner)
			}
			// With the schema accepted, the objects are still another role's.
			if _, err := gosync.Migrate(ctx, d.Pool, gosync.WithForeignSchemaOwner()); !errors.Is(err, gosync.ErrForeignOwner) || !strings.Contains(err.Error(), "--owner") {
				t.Fatalf("migrate without the owner role: %v; want ErrForeignOwner suggesting --owner", err)
			}
			nobody := loginAs(t, d, "", nil)
			if _, err := gosync.Migrate(ctx, nobody, gosync.WithOwner(owner)); !errors.Is(err, gosync.ErrForeignOwner) {
				t.Fatalf("WithOwner by a non-member: %v; want ErrForeignOwner", err)
			}
		})
	}
}
