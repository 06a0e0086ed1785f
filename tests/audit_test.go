package tests

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
	sqlfiles "github.com/gosync/gosync/sql"
)

// auditRow is one row of sync_security_audit().
type auditRow struct {
	Check    string
	OK       bool
	Detail   string
	Severity string
	Object   *string
}

func (r auditRow) String() string {
	obj := ""
	if r.Object != nil {
		obj = " [" + *r.Object + "]"
	}
	return fmt.Sprintf("%s %s%s: %s", r.Severity, r.Check, obj, r.Detail)
}

func readAudit(t *testing.T, q rowsQuerier) []auditRow {
	t.Helper()
	rows, err := q.Query(context.Background(), "SELECT check_name, ok, detail, severity, object FROM sync_security_audit()")
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[auditRow])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func failingRows(t *testing.T, q rowsQuerier) []auditRow {
	t.Helper()
	var failing []auditRow
	for _, r := range readAudit(t, q) {
		if !r.OK {
			failing = append(failing, r)
		}
	}
	return failing
}

// assertAuditClean: no row is red; a failing row must also say severity fail.
func assertAuditClean(t *testing.T, q rowsQuerier) {
	t.Helper()
	for _, r := range readAudit(t, q) {
		if !r.OK || r.Severity == "fail" {
			t.Errorf("audit row not ok on a healthy database: %s", r)
		}
	}
}

// assertRed: the check has a failing row naming object (the object column
// contains it), and every failing row of the audit belongs to one of the
// checks allowed (the state trips nothing unrelated).
func assertRed(t *testing.T, q rowsQuerier, check, object string, allowed ...string) {
	t.Helper()
	failing := failingRows(t, q)
	found := false
	for _, r := range failing {
		if r.Severity != "fail" {
			t.Errorf("failing row with severity %q: %s", r.Severity, r)
		}
		if r.Check == check && r.Object != nil && strings.Contains(*r.Object, object) {
			found = true
		}
	}
	if !found {
		t.Errorf("no failing %q row naming %q; failing rows:\n%s", check, object, joinRows(failing))
	}
	ok := map[string]bool{check: true}
	for _, a := range allowed {
		ok[a] = true
	}
	for _, r := range failing {
		if !ok[r.Check] {
			t.Errorf("unexpected failing row: %s", r)
		}
	}
}

func joinRows(rows []auditRow) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString("  " + r.String() + "\n")
	}
	return b.String()
}

// inAuditTx runs change in a transaction on a fresh database, runs check on
// that transaction, and rolls back: role grants are cluster-wide, and an
// uncommitted one is seen by nobody else. Afterwards the audit is clean again.
func inAuditTx(t *testing.T, d *pgtest.DB, change string, check func(tx pgx.Tx)) {
	t.Helper()
	ctx := context.Background()
	tx, err := d.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, change, pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatalf("%s: %v", change, err)
	}
	check(tx)
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	assertAuditClean(t, d.Pool)
}

// TestAuditFreshDatabaseClean: after a full `migrate up` every row is ok (a
// later migration that changes the catalog and forgets to call
// sync_record_installed_catalog() fails here), the record covers every
// gosync function, relation and trigger, the bypass row is informational and
// names the superuser, and max_prepared_transactions > 0 is a warning.
func TestAuditFreshDatabaseClean(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	assertAuditClean(t, d.Pool)
	rows := readAudit(t, d.Pool)
	seen := map[string]auditRow{}
	for _, r := range rows {
		seen[r.Check] = r
	}
	if r := seen["who can bypass the barrier"]; r.Severity != "info" || !strings.Contains(r.Detail, "superusers: postgres") ||
		!strings.Contains(r.Detail, "the owner role: postgres") {
		t.Errorf("bypass row: %s", r)
	}
	if r := seen["max_prepared_transactions is 0"]; r.Severity != "warn" || !r.OK || !strings.Contains(r.Detail, "= 10") {
		t.Errorf("max_prepared_transactions row on a cluster with 10: %s", r)
	}
	for _, c := range []string{"function definitions match the record", "grants match the record", "owners match the record",
		"triggers on the sync tables match the record", "the installed catalog is recorded", "fence trigger enabled"} {
		if r, ok := seen[c]; !ok || r.Severity != "ok" {
			t.Errorf("check %q: %s", c, r)
		}
	}
	// Every gosync function, sync_* relation and trigger is in the record.
	if n := queryOne[int](t, d.Pool, `SELECT count(*) FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace
		AND p.proname ~ '^sync(ular)?_' AND NOT EXISTS (SELECT 1 FROM sync_installed_catalog r WHERE r.kind = 'function'
		AND r.object = p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ')')`); n != 0 {
		t.Errorf("%d gosync functions are not recorded", n)
	}
	for kind, min := range map[string]int{"function": 30, "relation": 17, "trigger": 5} {
		if n := queryOne[int](t, d.Pool, "SELECT count(*) FROM sync_installed_catalog WHERE kind = $1", kind); n < min {
			t.Errorf("%d %s rows recorded, want at least %d", n, kind, min)
		}
	}
	if n := queryOne[int](t, d.Pool, "SELECT count(*) FROM sync_installed_catalog WHERE kind = 'function' AND state = 'security definer'"); n < 12 {
		t.Errorf("%d SECURITY DEFINER functions recorded, want the 12 of SECURITY.md at least", n)
	}
}

// TestAuditCleanAfterGooseCLI: the record is written by the migrations
// themselves, so a plain `goose up` (no gosync code) audits clean too.
func TestAuditCleanAfterGooseCLI(t *testing.T) {
	t.Parallel()
	d := pgtest.NewEmpty(t)
	cmd := exec.Command(gooseBinary(t), "-table", gosync.DefaultVersionTable, "-dir", "../sql/migrations", "postgres", d.URL, "up")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("goose up: %v\n%s", err, out)
	}
	assertAuditClean(t, d.Pool)
}

// TestAuditRecordIsOwnerOnly: every sync role reads the record and runs the
// audit; none can write the record or run the recorder.
func TestAuditRecordIsOwnerOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	before := queryOne[string](t, d.Pool, "SELECT string_agg(kind || object || coalesce(definition, ''), ',' ORDER BY kind, object) FROM sync_installed_catalog")
	for _, group := range []string{"sync_reader", "sync_writer", "sync_backfill", "sync_admin", ""} {
		pool := loginAs(t, d, group, nil)
		for _, sql := range []string{
			"SELECT sync_record_installed_catalog()",
			"DELETE FROM sync_installed_catalog",
			"UPDATE sync_installed_catalog SET definition = 'x'",
			"INSERT INTO sync_installed_catalog (kind, object, acl) VALUES ('function', 'sync_evil()', '{}')",
		} {
			_, err := pool.Exec(ctx, sql)
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
				t.Errorf("%s: %s: %v, want 42501", roleName(group), sql, err)
			}
		}
		if group != "" {
			if n := queryOne[int](t, pool, "SELECT count(*) FROM sync_security_audit() WHERE NOT ok"); n != 0 {
				t.Errorf("%s: %d failing audit rows", group, n)
			}
		}
	}
	if after := queryOne[string](t, d.Pool, "SELECT string_agg(kind || object || coalesce(definition, ''), ',' ORDER BY kind, object) FROM sync_installed_catalog"); after != before {
		t.Fatal("the record changed")
	}
}

// TestAuditReplacedHelper: a helper the triggers and functions call is
// replaced by one that checks nothing (a schema owner can do it). Before,
// no row noticed.
func TestAuditReplacedHelper(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	inAuditTx(t, d, `CREATE OR REPLACE FUNCTION sync_assert_key(label text, value text) RETURNS boolean
		LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, public, pg_temp AS $$ BEGIN RETURN true; END $$`,
		func(tx pgx.Tx) {
			assertRed(t, tx, "function definitions match the record", "sync_assert_key(label text, value text)")
		})
	// The fence replaced by a body that mentions the qualified names in a
	// comment (the old text test passed it) and drops the head rule.
	inAuditTx(t, d, `CREATE OR REPLACE FUNCTION syncular_writer_fence() RETURNS trigger LANGUAGE plpgsql AS $$
		-- reads public.sync_writer_fence f and public.sync_partitions p
		BEGIN RETURN NEW; END $$`,
		func(tx pgx.Tx) {
			assertRed(t, tx, "function definitions match the record", "syncular_writer_fence()")
		})
}

// TestAuditCommentPaddedBody: the same body with one comment added is a
// different definition.
func TestAuditCommentPaddedBody(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	inAuditTx(t, d, `DO $do$ BEGIN
		EXECUTE replace(pg_get_functiondef('sync_lock_partition(text)'::regprocedure), 'BEGIN', 'BEGIN -- reviewed');
	END $do$`, func(tx pgx.Tx) {
		if !queryOne[bool](t, tx, "SELECT prosrc LIKE '%-- reviewed%' FROM pg_proc WHERE oid = 'sync_lock_partition(text)'::regprocedure") {
			t.Fatal("the comment was not added")
		}
		assertRed(t, tx, "function definitions match the record", "sync_lock_partition(partition text)")
	})
}

// TestAuditRelations: row-level security on the fence table (the fence
// trigger reads it as the inserting role: a policy could hide every fence)
// and a view whose query was replaced.
func TestAuditRelations(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	inAuditTx(t, d, "ALTER TABLE sync_writer_fence ENABLE ROW LEVEL SECURITY", func(tx pgx.Tx) {
		assertRed(t, tx, "relations match the record", "sync_writer_fence")
		assertDetail(t, tx, "relations match the record", "sync_writer_fence", "changed to: row security on; columns")
		assertDetail(t, tx, "relations match the record", "sync_writer_fence", "recorded: row security off; columns")
	})
	inAuditTx(t, d, `DO $do$ BEGIN
		EXECUTE 'CREATE OR REPLACE VIEW sync_pending_checkpoints AS '
		  || rtrim(pg_get_viewdef('sync_pending_checkpoints'::regclass), '; ') || ' LIMIT 0';
	END $do$`, func(tx pgx.Tx) {
		assertRed(t, tx, "relations match the record", "sync_pending_checkpoints")
	})
}

// TestAuditGrantToPublic: EXECUTE on a SECURITY DEFINER function the old
// fixed list did not know (sync_remove_checkpoint), and a write grant on a
// barrier table to a sync role, both turn the grants row red.
func TestAuditGrantToPublic(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	inAuditTx(t, d, "GRANT EXECUTE ON FUNCTION sync_remove_checkpoint(text, text) TO PUBLIC", func(tx pgx.Tx) {
		assertRed(t, tx, "grants match the record", "sync_remove_checkpoint(partition text, name text)",
			"PUBLIC cannot execute privileged functions")
		assertDetail(t, tx, "grants match the record", "sync_remove_checkpoint", "granted since the record: PUBLIC EXECUTE")
		assertDetail(t, tx, "PUBLIC cannot execute privileged functions", "", "sync_remove_checkpoint")
	})
	inAuditTx(t, d, "GRANT UPDATE (max_commit_seq) ON sync_partitions TO sync_backfill", func(tx pgx.Tx) {
		assertRed(t, tx, "grants match the record", "sync_partitions")
		assertDetail(t, tx, "grants match the record", "sync_partitions", "sync_backfill UPDATE (max_commit_seq)")
	})
	inAuditTx(t, d, "REVOKE INSERT ON sync_commits FROM sync_writer", func(tx pgx.Tx) {
		assertDetail(t, tx, "grants match the record", "sync_commits", "revoked since the record: sync_writer INSERT")
	})
}

// assertDetail: a failing row of check whose object contains object has a
// detail containing want.
func assertDetail(t *testing.T, q rowsQuerier, check, object, want string) {
	t.Helper()
	rows := failingRows(t, q)
	for _, r := range rows {
		if r.Check == check && (object == "" || r.Object != nil && strings.Contains(*r.Object, object)) && strings.Contains(r.Detail, want) {
			return
		}
	}
	t.Errorf("no failing %q row on %q saying %q; failing rows:\n%s", check, object, want, joinRows(rows))
}

// TestAuditExtraSecurityDefiner: a SECURITY DEFINER function the migrations
// did not install, in the sync schema or owned by the owner role elsewhere.
func TestAuditExtraSecurityDefiner(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	inAuditTx(t, d, `CREATE FUNCTION sync_debug_reset(p text) RETURNS void LANGUAGE sql SECURITY DEFINER
		SET search_path = pg_catalog, public, pg_temp AS 'DELETE FROM public.sync_writer_fence WHERE partition = p';
		REVOKE EXECUTE ON FUNCTION sync_debug_reset(text) FROM PUBLIC`, func(tx pgx.Tx) {
		assertRed(t, tx, "every SECURITY DEFINER function is recorded as such", "sync_debug_reset(p text)",
			"every gosync object is recorded")
		assertRed(t, tx, "every gosync object is recorded", "sync_debug_reset(p text)",
			"every SECURITY DEFINER function is recorded as such")
	})
	inAuditTx(t, d, `CREATE SCHEMA tools; CREATE FUNCTION tools.lower_fence() RETURNS void LANGUAGE sql SECURITY DEFINER
		AS 'UPDATE public.sync_writer_fence SET required_writer_version = 1'`, func(tx pgx.Tx) {
		assertRed(t, tx, "every SECURITY DEFINER function is recorded as such", "tools.lower_fence()")
	})
}

// TestAuditChangedOwner: a table and a function handed to a service login.
func TestAuditChangedOwner(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	_, admin := loginURL(t, d, "sync_admin")
	owners := []string{"owners match the record", "one role owns every gosync object"}
	for _, c := range []struct{ change, object string }{
		{"ALTER TABLE sync_writer_fence OWNER TO ", "sync_writer_fence"},
		{"ALTER FUNCTION sync_prune_log(text, bigint) OWNER TO ", "sync_prune_log(partition text, through_seq bigint)"},
	} {
		inAuditTx(t, d, c.change+pgx.Identifier{admin}.Sanitize(), func(tx pgx.Tx) {
			for _, check := range owners {
				assertRed(t, tx, check, c.object, append(owners, "grants match the record",
					"privileged functions are SECURITY DEFINER with a pinned search_path")...)
				assertDetail(t, tx, check, c.object, "owned by "+admin)
			}
		})
	}
	// Owned by someone else already when the migrations ran (a function
	// pre-created under a gosync name, an adopted upstream login's tables):
	// the record holds that owner, the one-owner check does not accept it.
	for _, c := range []struct{ change, object string }{
		{"ALTER TABLE sync_commits OWNER TO ", "sync_commits"},
		{"ALTER FUNCTION sync_now_ms() OWNER TO ", "sync_now_ms()"},
	} {
		inAuditTx(t, d, c.change+pgx.Identifier{admin}.Sanitize()+"; SELECT sync_record_installed_catalog()", func(tx pgx.Tx) {
			assertRed(t, tx, "one role owns every gosync object", c.object)
			assertDetail(t, tx, "one role owns every gosync object", c.object, "owned by "+admin+", not by the owner role postgres")
		})
	}
}

// TestAuditWriterInAdmin: a sync role granted to another sync role lifts
// every login of the lower one.
func TestAuditWriterInAdmin(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	inAuditTx(t, d, "GRANT sync_admin TO sync_writer", func(tx pgx.Tx) {
		assertRed(t, tx, "sync roles are members of no higher role", "sync_writer")
		assertDetail(t, tx, "sync roles are members of no higher role", "sync_writer", "sync_writer is a member of sync_admin")
	})
	inAuditTx(t, d, "GRANT sync_backfill TO sync_writer", func(tx pgx.Tx) {
		assertRed(t, tx, "sync roles are members of no higher role", "sync_writer")
		assertDetail(t, tx, "sync roles are members of no higher role", "sync_writer", "sync_writer is a member of sync_backfill")
	})
}

// TestAuditLoginInOwner: a service login (in sync_writer) made a member of
// the owner role, and a login without a sync role made one after migrating.
func TestAuditLoginInOwner(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	_, writer := loginURL(t, d, "sync_writer")
	_, nobody := loginURL(t, d, "")
	inAuditTx(t, d, "GRANT postgres TO "+pgx.Identifier{writer}.Sanitize(), func(tx pgx.Tx) {
		assertRed(t, tx, "no member of a sync role is a superuser or can act as the owner role", writer,
			"members of the owner role match the record")
		assertRed(t, tx, "members of the owner role match the record", writer,
			"no member of a sync role is a superuser or can act as the owner role")
	})
	inAuditTx(t, d, "GRANT postgres TO "+pgx.Identifier{nobody}.Sanitize(), func(tx pgx.Tx) {
		assertRed(t, tx, "members of the owner role match the record", nobody)
		for _, r := range readAudit(t, tx) {
			if r.Check == "who can bypass the barrier" && !strings.Contains(r.Detail, nobody) {
				t.Errorf("bypass row does not list %s: %s", nobody, r)
			}
		}
	})
	inAuditTx(t, d, "ALTER ROLE "+pgx.Identifier{writer}.Sanitize()+" CREATEROLE", func(tx pgx.Tx) {
		assertRed(t, tx, "no member of a sync role is a superuser or can act as the owner role", writer)
	})
}

// TestAuditTriggers: a disabled trigger, one that fires only as a replica,
// and one re-created with a WHEN that never fires (present and enabled: the
// old rows passed it) are all reported by name.
func TestAuditTriggers(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	legacy := []string{"fence trigger enabled", "head-only triggers present and enabled"}
	inAuditTx(t, d, "ALTER TABLE sync_partitions DISABLE TRIGGER sync_partitions_guard_update", func(tx pgx.Tx) {
		assertRed(t, tx, "triggers on the sync tables match the record", "sync_partitions_guard_update on sync_partitions", legacy...)
		assertDetail(t, tx, "triggers on the sync tables match the record", "sync_partitions_guard_update", "tgenabled = D, recorded O")
	})
	inAuditTx(t, d, "ALTER TABLE sync_changes ENABLE REPLICA TRIGGER sync_changes_follow_commit", func(tx pgx.Tx) {
		assertRed(t, tx, "triggers on the sync tables match the record", "sync_changes_follow_commit on sync_changes", legacy...)
	})
	inAuditTx(t, d, `DROP TRIGGER sync_partitions_guard_update ON sync_partitions;
		CREATE TRIGGER sync_partitions_guard_update BEFORE UPDATE ON sync_partitions FOR EACH ROW
		WHEN (NEW.partition <> OLD.partition) EXECUTE FUNCTION sync_partitions_guard()`, func(tx pgx.Tx) {
		assertRed(t, tx, "triggers on the sync tables match the record", "sync_partitions_guard_update on sync_partitions")
		assertDetail(t, tx, "triggers on the sync tables match the record", "sync_partitions_guard_update", "changed to: ")
	})
	inAuditTx(t, d, "DROP TRIGGER sync_change_scopes_follow_commit ON sync_change_scopes", func(tx pgx.Tx) {
		assertDetail(t, tx, "triggers on the sync tables match the record", "sync_change_scopes_follow_commit", "missing")
	})
}

// TestAuditPreparedTransaction: a writer's prepared transaction holding the
// partition row (and so sync_partitions) is reported with its gid, owner
// and lock until it is ended.
func TestAuditPreparedTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	mustExec(t, d.Pool, "SELECT sync_lock_partition('p1')")
	u, writer := loginURL(t, d, "sync_writer")
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	gid := d.Name + "_held"
	mustExec(t, conn, "BEGIN")
	mustExec(t, conn, "UPDATE sync_partitions SET max_commit_seq = max_commit_seq + 1 WHERE partition = 'p1'")
	mustExec(t, conn, "PREPARE TRANSACTION '"+gid+"'")
	ended := false
	t.Cleanup(func() {
		if !ended {
			_, _ = d.Pool.Exec(context.Background(), "ROLLBACK PREPARED '"+gid+"'")
		}
	})
	check := "no prepared transaction holds a sync table or an advisory lock"
	assertRed(t, d.Pool, check, gid)
	assertDetail(t, d.Pool, check, gid, "prepared by "+writer)
	assertDetail(t, d.Pool, check, gid, "RowExclusiveLock on sync_partitions")
	mustExec(t, d.Pool, "ROLLBACK PREPARED '"+gid+"'")
	ended = true
	assertAuditClean(t, d.Pool)

	// Any login can hold the migration lock of the adoption step in a
	// prepared transaction.
	_, nobody := loginURL(t, d, "")
	u.User = url.UserPassword(nobody, "pw")
	other, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	gid2 := d.Name + "_lock"
	mustExec(t, other, "BEGIN")
	mustExec(t, other, "SELECT pg_advisory_xact_lock(hashtext('gosync version table'))")
	mustExec(t, other, "PREPARE TRANSACTION '"+gid2+"'")
	t.Cleanup(func() { _, _ = d.Pool.Exec(context.Background(), "ROLLBACK PREPARED '"+gid2+"'") })
	assertRed(t, d.Pool, check, gid2)
	assertDetail(t, d.Pool, check, gid2, "ExclusiveLock on advisory lock")
}

// TestAuditSchemaOwner: public handed to a sync_writer login, directly or as
// the database owner (public belongs to pg_database_owner on Postgres 15).
func TestAuditSchemaOwner(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	_, writer := loginURL(t, d, "sync_writer")
	check := "the sync schema and public belong to the owner role"
	inAuditTx(t, d, "ALTER SCHEMA public OWNER TO "+pgx.Identifier{writer}.Sanitize(), func(tx pgx.Tx) {
		assertRed(t, tx, check, "public")
		assertDetail(t, tx, check, "public", "owned by "+writer)
	})
	inAuditTx(t, d, "ALTER DATABASE "+pgx.Identifier{d.Name}.Sanitize()+" OWNER TO "+pgx.Identifier{writer}.Sanitize(), func(tx pgx.Tx) {
		assertRed(t, tx, check, "public")
		assertDetail(t, tx, check, "public", "through pg_database_owner")
		for _, r := range readAudit(t, tx) {
			if r.Check == "who can bypass the barrier" && !strings.Contains(r.Detail, "public "+writer) {
				t.Errorf("bypass row does not list the schema owner %s: %s", writer, r)
			}
		}
	})
	inAuditTx(t, d, "GRANT CREATE ON SCHEMA public TO sync_writer", func(tx pgx.Tx) {
		assertRed(t, tx, "sync roles cannot create objects in the sync schema or public", "sync_writer on public")
	})
}

// TestAuditMigrationDown: 00020's Down restores the previous audit exactly
// (definition and grants) and drops the record, the snapshot and the
// recorder; Up again records a clean catalog.
func TestAuditMigrationDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, p := emptyMigrator(t)
	var prev int64
	for _, s := range p.ListSources() {
		if s.Version < 20 && s.Version > prev {
			prev = s.Version
		}
	}
	if prev == 0 {
		t.Fatal("no migration before 00020")
	}
	if _, err := p.UpTo(ctx, prev); err != nil {
		t.Fatal(err)
	}
	const acl = "SELECT coalesce(proacl::text, 'default') FROM pg_proc WHERE proname = 'sync_security_audit' AND pronamespace = current_schema()::regnamespace"
	before, beforeACL := dumpWholeCatalog(t, d.Pool), queryOne[string](t, d.Pool, acl)
	if _, err := p.UpTo(ctx, 20); err != nil {
		t.Fatal(err)
	}
	assertAuditClean(t, d.Pool)
	if _, err := p.DownTo(ctx, prev); err != nil {
		t.Fatal(err)
	}
	if after := dumpWholeCatalog(t, d.Pool); after != before {
		t.Fatalf("catalog after 00020 up/down differs:\n%s", lineDiff(before, after))
	}
	if after := queryOne[string](t, d.Pool, acl); after != beforeACL {
		t.Fatalf("audit grants after down: %s, want %s", after, beforeACL)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	assertAuditClean(t, d.Pool)
}

// TestAuditMigrationsRecord: every migration from 00020 on ends its Up (and
// every later one its Down) with the recorder, so the record is what the
// migrations installed; TestAuditFreshDatabaseClean proves the result.
func TestAuditMigrationsRecord(t *testing.T) {
	t.Parallel()
	files, err := fs.Glob(sqlfiles.Migrations(), "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	const call = "SELECT sync_record_installed_catalog();"
	checked := 0
	for _, f := range files {
		var version int
		if _, err := fmt.Sscanf(f, "%d_", &version); err != nil || version < 20 {
			continue
		}
		body, err := fs.ReadFile(sqlfiles.Migrations(), f)
		if err != nil {
			t.Fatal(err)
		}
		up, down, _ := strings.Cut(string(body), "-- +goose Down")
		if !strings.HasSuffix(strings.TrimSpace(up), call) {
			t.Errorf("%s: Up does not end with %s", f, call)
		}
		if version > 20 && !strings.HasSuffix(strings.TrimSpace(down), call) {
			t.Errorf("%s: Down does not end with %s", f, call)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no migration from 00020 on")
	}
}
