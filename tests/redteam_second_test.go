package tests

// The second red-team pass on issue 17, against the final state (00021,
// 00022, the migrator's bounded DDL waits), from a fresh migrated database.
// Each TestRedTeamSecond<What> but TestRedTeamSecondHolds is an attack that
// worked before migration 00026 (each comment tells it as it was);
// TestRedTeamSecondHolds keeps cheap attempts that were refused. None
// repeats redteam_final_test.go.
//
// Every attack that worked needs a bypass role (the owner) to prepare the
// catalog, so none breaks a rule for a role below the owner on its own; they
// are what sync_security_audit() exists to see, and it sees none of them:
// each hands a sync role a write path to a barrier table through an object
// the audit does not look at, or weakens a barrier table in a way its
// record does not cover.

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gosync/gosync/examples/todos"
	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// lowerFenceAround is the sync_writer's side of the fence-write attacks: in
// ONE transaction (READ COMMITTED), through table, it lowers p1's fence to
// 1, appends an old writer's commit at writer_version 1 (in a savepoint, so
// the head rule's "fence row and partition row from one (sub)transaction"
// mark does not trip), and raises the fence back to 2. Nobody ever sees the
// lowered fence, the audit's data row included. It returns the seq landed.
func lowerFenceAround(t *testing.T, writer pgx.Tx, table string) int64 {
	t.Helper()
	ctx := context.Background()
	mustExec(t, writer, `UPDATE `+table+` SET required_writer_version = 1 WHERE partition = 'p1'`)
	mustExec(t, writer, `SAVEPOINT a`)
	seq, err := oldWriterCommit(ctx, writer, "p1", v(1))
	if err != nil {
		t.Fatalf("the v1 commit under the lowered fence was refused: %v", err)
	}
	mustExec(t, writer, `RELEASE a`)
	mustExec(t, writer, `SAVEPOINT b`)
	mustExec(t, writer, `UPDATE `+table+` SET required_writer_version = 2 WHERE partition = 'p1'`)
	mustExec(t, writer, `RELEASE b`)
	return seq
}

// fenceWriteThrough runs the owner's setup, then the writer's attack, and
// fails when the audit stayed clean throughout.
func fenceWriteThrough(t *testing.T, setup []string, table string) {
	t.Helper()
	ctx := context.Background()
	d, _ := readyDB(t)
	if f := auditFailures(t, d); f != "" {
		t.Fatalf("audit not clean before the setup:\n%s", f)
	}
	for _, s := range setup {
		mustExec(t, d.Pool, s) // as the owner (the harness's migrating role)
	}
	setupAudit := auditFailures(t, d)
	writer := loginAs(t, d, "sync_writer", nil)
	// The writer cannot write the fence itself (the audit's check 9 is right).
	if _, err := writer.Exec(ctx, `UPDATE sync_writer_fence SET required_writer_version = 1`); sqlState(err) != "42501" {
		t.Fatalf("direct fence write by sync_writer: %v, want 42501", err)
	}
	tx, err := writer.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seq := lowerFenceAround(t, tx, table)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wv := queryOne[int64](t, d.Pool, `SELECT writer_version FROM sync_commits WHERE partition = 'p1' AND commit_seq = $1`, seq)
	t.Logf("sync_writer appended commit %d at writer_version %d under p1's fence %d (declared v2 checkpoint pending)",
		seq, wv, fenceOf(t, d.Pool, "p1"))
	if after := auditFailures(t, d); setupAudit == "" && after == "" {
		t.Fatalf("every audit row ok after the owner's setup %q and after sync_writer used it to land a v1 commit under the v2 fence of p1", setup)
	}
}

// TestRedTeamSecondFenceWritableThroughParent: the owner (or anyone who may
// ALTER sync_writer_fence) makes the fence table an inheritance CHILD of a
// table with another name and grants that parent to sync_writer:
//
//	-- as the owner role
//	CREATE TABLE app_fence_parent (partition text, required_writer_version integer);
//	ALTER TABLE sync_writer_fence INHERIT app_fence_parent;
//	GRANT SELECT, UPDATE ON app_fence_parent TO sync_writer;
//	-- then, as a login in sync_writer only, READ COMMITTED, one transaction:
//	UPDATE app_fence_parent SET required_writer_version = 1 WHERE partition = 'p1';
//	SAVEPOINT a; <old writer's allocation + INSERT INTO sync_commits ... writer_version 1>; RELEASE a;
//	SAVEPOINT b; UPDATE app_fence_parent SET required_writer_version = 2 WHERE partition = 'p1'; RELEASE b;
//	COMMIT;
//
// A query on a parent checks privileges on the parent only, so the writer
// rewrites (and could DELETE) every fence. The audit records a table's
// inheritance CHILDREN, not its parents (pg_inherits.inhrelid), and
// attinhcount/coninhcount are not in the column and constraint digests; its
// check 9 asks has_table_privilege on sync_writer_fence itself; the parent is
// not a sync_* relation. The fence is back at 2 when the transaction ends,
// so "every checkpoint's partition is fenced" stays ok too: every row ok,
// with a v1 commit under the v2 fence of a partition whose v2 projection is
// declared. Same for sync_commits, sync_backfill_checkpoints, sync_schema_meta
// (ALTER TABLE ... INHERIT). Severity: medium (needs the owner to set up;
// afterwards the least writer role lowers fences at will and the audit is
// blind to both the path and its use).
func TestRedTeamSecondFenceWritableThroughParent(t *testing.T) {
	fenceWriteThrough(t, []string{
		`CREATE TABLE app_fence_parent (partition text, required_writer_version integer)`,
		`ALTER TABLE sync_writer_fence INHERIT app_fence_parent`,
		`GRANT SELECT, UPDATE ON app_fence_parent TO sync_writer`,
	}, "app_fence_parent")
}

// TestRedTeamSecondFenceWritableThroughView: the same through a view the
// owner owns (a view reads and writes its base tables with its OWNER's
// privileges: it is to tables what SECURITY DEFINER is to functions):
//
//	-- as the owner role
//	CREATE VIEW app_fences AS SELECT * FROM sync_writer_fence;
//	GRANT SELECT, UPDATE ON app_fences TO sync_writer;
//	-- then the writer's transaction of TestRedTeamSecondFenceWritableThroughParent on app_fences
//
// The audit looks for SECURITY DEFINER functions owned by the owner role in
// every schema ("every SECURITY DEFINER function is recorded as such"), but
// for relations only at sync_* names in the sync schema: a view (or a rule
// on an application table: rule actions also run as the table's owner)
// owned by the owner role under any other name is not seen. Severity:
// medium, as above.
func TestRedTeamSecondFenceWritableThroughView(t *testing.T) {
	fenceWriteThrough(t, []string{
		`CREATE VIEW app_fences AS SELECT * FROM sync_writer_fence`,
		`GRANT SELECT, UPDATE ON app_fences TO sync_writer`,
	}, "app_fences")
}

// TestRedTeamSecondUnloggedFence: the owner makes a barrier table unlogged:
//
//	-- as the owner role
//	ALTER TABLE sync_writer_fence SET UNLOGGED;   -- or sync_commits with its dependents, sync_backfill_checkpoints
//
// Nothing changes until the server crashes (or a failover to a replica,
// which has no unlogged data): then crash recovery truncates the table, and
// every fence is gone; old writers append under every declared projection.
// pg_class.relpersistence is not in the relation record, so the audit is
// clean until the crash (afterwards only the data row sees it, for
// partitions with checkpoints). Severity: low-medium (owner only; silent
// until a crash).
func TestRedTeamSecondUnloggedFence(t *testing.T) {
	for _, table := range []string{"sync_writer_fence", "sync_backfill_checkpoints", "sync_schema_meta"} {
		t.Run(table, func(t *testing.T) {
			d, _ := readyDB(t)
			mustExec(t, d.Pool, `ALTER TABLE `+table+` SET UNLOGGED`)
			if f := auditFailures(t, d); f == "" {
				t.Fatalf("every audit row ok with %s UNLOGGED (a crash empties it)", table)
			}
		})
	}
}

// TestRedTeamSecondDefaultPrivileges: default privileges of the owner role
// are not audited, and the recorder takes whatever a migration's new table
// got as the reference:
//
//	-- as the owner role
//	ALTER DEFAULT PRIVILEGES GRANT INSERT, UPDATE, DELETE ON TABLES TO sync_writer;
//	-- a later migrate up that creates a table (here: migrate down to 18, then up again,
//	-- which re-creates sync_all_partition_checkpoints (00019) and sync_installed_catalog (00020);
//	-- their REVOKE ALL ... FROM PUBLIC does not touch the grant to sync_writer)
//	-- then, as a login in sync_writer only:
//	UPDATE sync_all_partition_checkpoints SET names = '{}', schema_versions = '{}';
//	-- a new partition now gets no fence and no checkpoint; an old writer appends in it at v1
//
// Every migration ends with sync_record_installed_catalog(), so the grants
// are recorded as intended; check 9 lists neither table. The writer can also
// rewrite sync_installed_catalog, the audit's reference itself. Severity:
// medium (needs the owner to set the default; pg_default_acl is read by
// nothing).
func TestRedTeamSecondDefaultPrivileges(t *testing.T) {
	ctx := context.Background()
	d := pgtest.New(t)
	mustExec(t, d.Pool, `ALTER DEFAULT PRIVILEGES GRANT INSERT, UPDATE, DELETE ON TABLES TO sync_writer`)
	m, err := gosync.NewMigrator(ctx, d.Pool)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.DownTo(ctx, 18); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx); err != nil {
		t.Fatal(err)
	}
	s := gosync.New(d.Pool)
	if err := s.EnsureSchema(ctx, todosSchema(1), nil, todosDDL(1)); err != nil {
		t.Fatal(err)
	}
	everywhere := []gosync.CheckpointDeclaration{{AllPartitions: true, Name: todos.Projection, SchemaVersion: 2}}
	if err := s.EnsureSchema(ctx, todosSchema(2), everywhere, todosDDL(2)); err != nil {
		t.Fatal(err)
	}
	writer := loginAs(t, d, "sync_writer", nil)
	if _, err := writer.Exec(ctx, `UPDATE sync_all_partition_checkpoints SET names = '{}', schema_versions = '{}'`); err != nil {
		t.Logf("the writer could not empty the declarations: %v", err)
		return
	}
	seq, err := oldWriterCommit(ctx, writer, "fresh", v(1))
	if err == nil {
		t.Logf("sync_writer emptied the every-partition declaration; an old v1 writer then created partition fresh and appended seq %d (fence rows: %d)",
			seq, queryOne[int64](t, d.Pool, `SELECT count(*) FROM sync_writer_fence WHERE partition = 'fresh'`))
	}
	if f := auditFailures(t, d); f == "" {
		t.Fatalf("every audit row ok while sync_writer may write sync_all_partition_checkpoints and sync_installed_catalog (default privileges of the owner role)")
	}
}

// TestRedTeamSecondHolds: attempts on the new pieces by roles below the
// owner that were refused (each a fresh statement as a login in the role):
//   - COMMENT ON a gosync function, table, trigger, view: 42501 for every sync role and a login with none;
//   - partition-name guard through upserts: INSERT ... ON CONFLICT DO NOTHING / DO UPDATE of the empty name and a 513-character name;
//   - registry clock: INSERT ... ON CONFLICT DO UPDATE SET last_authenticated_at_ms = EXCLUDED (far future),
//     = sync_partition_registry.last_authenticated_at_ms + 10^12, negative; ON CONFLICT DO UPDATE SET log_epoch (no grant);
//   - sync_install_all_partitions called by a sync_admin without sync_begin_schema_change: 55000;
//   - sync_security_audit() as each sync role: clean, the data row included (a login with no sync role: 42501).
func TestRedTeamSecondHolds(t *testing.T) {
	ctx := context.Background()
	d, _ := readyDB(t)
	roles := []string{"sync_reader", "sync_writer", "sync_backfill", "sync_admin", ""}
	pools := map[string]interface {
		execer
		querier
	}{}
	for _, r := range roles {
		pools[r] = loginAs(t, d, r, nil)
	}
	mustExec(t, pools["sync_writer"], `SELECT FROM sync_touch_partition('p1')`)
	before := attackState(t, d)
	for _, r := range roles {
		for _, c := range []string{
			`COMMENT ON FUNCTION sync_push(text,integer,text,text[],text[],text[],text,text,text,bigint,text[],text[],smallint[],bigint[],jsonb[],bytea[]) IS 'x'`,
			`COMMENT ON FUNCTION syncular_writer_fence() IS 'x'`,
			`COMMENT ON TABLE sync_commits IS 'x'`,
			`COMMENT ON TRIGGER sync_commits_writer_fence ON sync_commits IS 'x'`,
			`COMMENT ON VIEW sync_barrier_status IS 'x'`,
			`COMMENT ON COLUMN sync_writer_fence.required_writer_version IS 'x'`,
		} {
			_, err := pools[r].Exec(ctx, c)
			if err == nil || (sqlState(err) != "42501" && sqlState(err) != "42883" && sqlState(err) != "42P01" && sqlState(err) != "42704") {
				t.Errorf("%q as %q: %v", c, r, err)
			}
		}
	}
	writer := pools["sync_writer"]
	for _, c := range []struct{ sql, state string }{
		{`INSERT INTO sync_partitions (partition) VALUES ('') ON CONFLICT DO NOTHING`, "22023"},
		{`INSERT INTO sync_partitions (partition) VALUES (repeat('y', 513)) ON CONFLICT (partition) DO UPDATE SET max_commit_seq = sync_partitions.max_commit_seq + 1`, "22023"},
		{`INSERT INTO sync_partition_registry (partition, log_epoch, last_authenticated_at_ms) VALUES ('p1', 'e', 9223372036854775807)
		  ON CONFLICT (partition) DO UPDATE SET last_authenticated_at_ms = EXCLUDED.last_authenticated_at_ms`, "22023"},
		{`INSERT INTO sync_partition_registry (partition, log_epoch, last_authenticated_at_ms) VALUES ('p1', 'e', 0)
		  ON CONFLICT (partition) DO UPDATE SET last_authenticated_at_ms = sync_partition_registry.last_authenticated_at_ms + 1000000000000`, "22023"},
		{`UPDATE sync_partition_registry SET last_authenticated_at_ms = -1`, "22023"},
		{`INSERT INTO sync_partition_registry (partition, log_epoch, last_authenticated_at_ms) VALUES ('p1', 'e', 0)
		  ON CONFLICT (partition) DO UPDATE SET log_epoch = EXCLUDED.log_epoch`, "42501"},
	} {
		if _, err := writer.Exec(ctx, c.sql); sqlState(err) != c.state {
			t.Errorf("%s: %v, want %s", strings.Join(strings.Fields(c.sql), " "), err, c.state)
		}
	}
	if _, err := pools["sync_admin"].Exec(ctx, `SELECT sync_install_all_partitions(ARRAY['x'], 3)`); sqlState(err) != "55000" {
		t.Errorf("sync_install_all_partitions outside a bump: %v, want 55000", err)
	}
	// The audit (and its data row) runs for every sync role, not for a login without one.
	for _, r := range roles {
		var n int64
		err := pools[r].QueryRow(ctx, `SELECT count(*) FROM sync_security_audit() WHERE NOT ok`).Scan(&n)
		if (r == "") != (sqlState(err) == "42501") || (r != "" && (err != nil || n != 0)) {
			t.Errorf("audit as %q: %d failing rows, err %v", r, n, err)
		}
	}
	if after := attackState(t, d); after != before {
		t.Fatalf("state moved:\n%s", lineDiff(before, after))
	}
}

// TestRedTeamSecondHoleBlocksPrune: a sync_writer login stops the
// operator's retention in every partition without a fence (any partition
// before its first declaration: a schema-v1 database has none), with one
// transaction that allocates a seq and commits nothing:
//
//	-- as a login in sync_writer only, READ COMMITTED
//	BEGIN; UPDATE sync_partitions SET max_commit_seq = max_commit_seq + 1 WHERE partition = 'p1'; COMMIT;
//	-- then the operator, as sync_admin:
//	SELECT sync_prune_log('p1', 1);   -- any through_seq below the head
//	-- ERROR 23514 sync.storage.partition_seq_rejected: ... the partition has no fence row to mark that with
//
// The horizon raise is an owner's touch over a head without its commit, and
// with no fence row the guard can only refuse it. It lasts until the next
// push moves the head (and the writer can leave a new empty head after
// every push). sync_prune_log through the head itself works (the hint), but
// that deletes the whole log. Severity: low (denial of retention by the
// writer role; nothing is appended or lost).
func TestRedTeamSecondHoleBlocksPrune(t *testing.T) {
	ctx := context.Background()
	d, _ := v1DB(t)
	writer := loginAs(t, d, "sync_writer", nil)
	admin := loginAs(t, d, "sync_admin", nil)
	seedPartition(t, writer, "p1")
	if _, err := pushChange(ctx, writer, "p1", "todos", 1); err != nil {
		t.Fatal(err)
	}
	makeHole(t, writer, "p1")
	if _, err := admin.Exec(ctx, `SELECT sync_prune_log('p1', 1)`); err != nil {
		t.Fatalf("sync_admin cannot prune p1 through seq 1 after a sync_writer left its head (seq 3) empty: %v", err)
	}
}
