package tests

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// TestRolePrivileges: for each group role, every operation is attempted for
// real by a login member. Allowed ones run in a rolled-back transaction;
// denied ones fail with insufficient_privilege (42501) and change nothing.
func TestRolePrivileges(t *testing.T) {
	ctx := context.Background()
	d := pgtest.New(t)
	s := gosync.New(d.Pool)
	if _, err := s.DeclareCheckpoint(ctx, "p1", "proj", 2); err != nil {
		t.Fatal(err)
	}
	storeTables(t, d, 2, "todos")
	mustPush(t, d.Pool, "p2", "todos", 1)

	const (
		allow   = "allow"
		fenced  = "P0001" // the writer fence, not a privilege
		denied  = "42501"
		noWrite = "fence stays 2"
	)
	type op struct{ name, sql string }
	ops := []op{
		{"write a commit below the fence", `INSERT INTO sync_commits VALUES ('p1', 100, 'c', 'x', 'a', 0, 1)`},
		{"append a commit at the fence", `SELECT sync_append_commit('p2', 'c', 'ok', 'a', 0, 2, '{}', '{}', '{}', '{}', '{}', '{}')`},
		{"push through sync_push", `SELECT * FROM sync_push('p2', 2, NULL, '{proj}', '{}', '{}', 'c', 'ok2', 'a', 0, '{}', '{}', '{}', '{}', '{}', '{}')`},
		{"update the fence row", `UPDATE sync_writer_fence SET required_writer_version = 1`},
		{"delete the fence row", `DELETE FROM sync_writer_fence`},
		{"disable the fence trigger", `ALTER TABLE sync_commits DISABLE TRIGGER sync_commits_writer_fence`},
		{"drop the fence trigger", `DROP TRIGGER sync_commits_writer_fence ON sync_commits`},
		{"replica mode (skips triggers)", `SET session_replication_role = replica`},
		{"lower the fence by declaring", `SELECT sync_declare_checkpoint('p1', 'lower', 1)`},
		{"lower the fence by installing", `SELECT sync_install_checkpoint('p1', 'lower2', 1)`},
		{"lower the fence by installing many", `SELECT sync_install_checkpoints('{p1}', '{lower3}', 1)`},
		{"claim a checkpoint", `SELECT sync_claim_checkpoint('p1', 'proj', 2)`},
		{"claim the next checkpoint of a fleet", `SELECT * FROM sync_claim_next_checkpoint('proj', 2, 60000)`},
		{"advance a checkpoint", `SELECT sync_advance_checkpoint('p1', 'proj', 0, 0, 0)`},
		{"activate a checkpoint", `SELECT sync_activate_checkpoint('p1', 'proj', 0, 0, ARRAY['todos'])`},
		{"edit a checkpoint directly", `UPDATE sync_backfill_checkpoints SET state = 'activated'`},
		{"edit the schema marker", `INSERT INTO sync_schema_meta VALUES (1, 9, '{}')`},
		{"bump the schema", `SELECT sync_begin_schema_change(), sync_set_schema_version(3)`},
		{"prune the log", `SELECT sync_prune_log('p2', 0)`},
		{"read the status view", `SELECT count(*) FROM sync_barrier_status`},
		{"read the serve gate", `SELECT * FROM sync_serve_gate('p1', 2)`},
		{"run the serve check", `SELECT * FROM sync_serve_check('p1', 2)`},
		{"run the audit", `SELECT count(*) FROM sync_security_audit()`},
	}
	matrix := map[string]map[string]string{
		"sync_writer": {"write a commit below the fence": fenced, "append a commit at the fence": allow, "push through sync_push": allow,
			"read the status view": allow, "read the serve gate": allow, "run the serve check": allow, "run the audit": allow},
		"sync_backfill": {"claim a checkpoint": allow, "claim the next checkpoint of a fleet": allow, "advance a checkpoint": allow, "activate a checkpoint": allow,
			"read the status view": allow, "read the serve gate": allow, "run the serve check": allow, "run the audit": allow},
		"sync_admin": {"lower the fence by declaring": noWrite, "lower the fence by installing": noWrite, "lower the fence by installing many": noWrite,
			"claim a checkpoint": allow, "claim the next checkpoint of a fleet": allow, "advance a checkpoint": allow, "activate a checkpoint": allow, "bump the schema": allow,
			"prune the log": allow, "read the status view": allow, "read the serve gate": allow, "run the serve check": allow, "run the audit": allow},
		"sync_reader": {"read the status view": allow, "read the serve gate": allow, "run the serve check": allow, "run the audit": allow},
		"":            {}, // a login role with no sync role at all
	}
	for group, allowed := range matrix {
		pool := loginAs(t, d, group, nil)
		for _, o := range ops {
			want := allowed[o.name]
			if want == "" {
				want = denied
			}
			before := barrierState(t, d) + " | " + logState(t, d)
			var err error
			if want == allow || want == noWrite {
				err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					if _, err := tx.Exec(ctx, o.sql); err != nil {
						return err
					}
					if want == noWrite {
						var fence int
						if err := tx.QueryRow(ctx, "SELECT required_writer_version FROM sync_writer_fence WHERE partition = 'p1'").Scan(&fence); err != nil {
							return err
						}
						if fence != 2 {
							return fmt.Errorf("the fence went down to %d", fence)
						}
					}
					return errRollback
				})
				if errors.Is(err, errRollback) {
					err = nil
				}
				if err != nil {
					t.Errorf("%s: %s: %v, want it allowed", roleName(group), o.name, err)
				}
				continue
			}
			_, err = pool.Exec(ctx, o.sql)
			if code := sqlState(err); code != want {
				t.Errorf("%s: %s: SQLSTATE %q (%v), want %s", roleName(group), o.name, code, err, want)
			}
			if after := barrierState(t, d) + " | " + logState(t, d); after != before {
				t.Errorf("%s: %s: a refused operation changed the state:\nbefore %s\nafter  %s", roleName(group), o.name, before, after)
			}
		}
	}
}

var errRollback = errors.New("rollback")

func roleName(group string) string {
	if group == "" {
		return "a role with no sync role"
	}
	return group
}

// TestSearchPathHijack: the sync tables live in a non-default schema. An
// unprivileged user plants same-named tables and functions in a schema that
// comes first on the victims' search_path, and a temp table shadows another
// (temp tables come first for relations by default). The fence and the
// checkpoint functions pin their search_path and are not fooled; everything
// works through the Go API from the non-default schema.
func TestSearchPathHijack(t *testing.T) {
	ctx := context.Background()
	d := pgtest.NewEmpty(t)
	mustExec(t, d.Pool, "CREATE SCHEMA synced")
	cfg, err := pgxpool.ParseConfig(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = "synced"
	owner, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	if _, err := gosync.Migrate(ctx, owner); err != nil {
		t.Fatal(err)
	}
	s := gosync.New(owner)
	if err := s.EnsureSchema(ctx, todosSchema(1), nil, todosDDL(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Push(ctx, "p1", todoCommit("v1", 1), serverV1); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureSchema(ctx, todosSchema(2), []gosync.CheckpointDeclaration{todosByOwner}, todosDDL(2)); err != nil {
		t.Fatalf("schema bump in a non-default schema: %v", err)
	}
	mustExec(t, owner, "GRANT USAGE ON SCHEMA synced TO sync_reader")

	// Mallory owns a schema and plants look-alikes in it.
	mallory := loginAs(t, d, "", nil)
	mustExec(t, d.Pool, "CREATE SCHEMA evil AUTHORIZATION "+pgx.Identifier{d.Name + "_nobody"}.Sanitize())
	for _, plant := range []string{
		"CREATE TABLE evil.sync_writer_fence (partition text, required_writer_version integer)",
		"CREATE TABLE evil.sync_changes (partition text, commit_seq bigint, idx integer, tbl text, row_id text, op smallint, row_version bigint, scopes jsonb, payload bytea)",
		"CREATE FUNCTION evil.sync_assert_key(label text, value text) RETURNS boolean LANGUAGE sql AS 'SELECT true'",
		"CREATE FUNCTION evil.sync_lock_partition(partition text) RETURNS void LANGUAGE sql AS ''",
		"GRANT USAGE ON SCHEMA evil TO PUBLIC",
		"GRANT SELECT ON evil.sync_writer_fence, evil.sync_changes TO PUBLIC",
	} {
		if _, err := mallory.Exec(ctx, plant); err != nil {
			t.Fatalf("%s: %v", plant, err)
		}
	}
	path := map[string]string{"search_path": "evil, synced"}

	// A writer with evil first on its path, and a temp table of its own.
	writer := loginAs(t, d, "sync_writer", path)
	conn, err := writer.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	mustExec(t, conn, "CREATE TEMP TABLE sync_writer_fence (partition text, required_writer_version integer)")
	_, err = conn.Exec(ctx, "INSERT INTO synced.sync_commits VALUES ('p1', 99, 'old', 'old-1', 'a', 0, 1)")
	if !errors.Is(gosync.MapError(err), gosync.ErrWriterFenceRejected) {
		t.Fatalf("a v1 insert with look-alike fence tables on the path: %v, want the fence", err)
	}

	// A backfill worker whose path shows an empty sync_changes: activation
	// must still see the real change above watermark 0.
	backfill := loginAs(t, d, "sync_backfill", path)
	var epoch int64
	if err := backfill.QueryRow(ctx, "SELECT owner_epoch FROM sync_claim_checkpoint('p1', 'todos_by_owner', 2)").Scan(&epoch); err != nil {
		t.Fatal(err)
	}
	var result string
	if err := backfill.QueryRow(ctx, "SELECT sync_activate_checkpoint('p1', 'todos_by_owner', $1, 0, ARRAY['todos'])", epoch).Scan(&result); err != nil {
		t.Fatal(err)
	}
	if result != "stale" {
		t.Fatalf("activation over a planted empty sync_changes = %q, want stale", result)
	}

	// An admin whose path has a permissive sync_assert_key: validation holds.
	admin := loginAs(t, d, "sync_admin", path)
	_, err = admin.Exec(ctx, "SELECT sync_declare_checkpoint('', 'x', 2)")
	if !errors.Is(gosync.MapError(err), gosync.ErrInvalidArgument) {
		t.Fatalf("declare with an empty partition past a planted validator: %v", err)
	}

	// And the Go API works on the non-default schema, as a writer would use it.
	if _, err := s.Push(ctx, "p2", todoCommit("v2", 2), serverV2); err != nil {
		t.Fatalf("push in the non-default schema: %v", err)
	}
	if audit := queryOne[int](t, owner, "SELECT count(*) FROM sync_security_audit() WHERE NOT ok"); audit != 0 {
		t.Fatalf("audit in the non-default schema: %d failing checks", audit)
	}
}

// TestSecurityAudit: healthy after migrating; a disabled trigger is reported.
func TestSecurityAudit(t *testing.T) {
	ctx := context.Background()
	d := pgtest.New(t)
	failing := func() []string {
		rows, err := d.Pool.Query(ctx, "SELECT check_name FROM sync_security_audit() WHERE NOT ok")
		if err != nil {
			t.Fatal(err)
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		// A check fails with one row per object: name each check once.
		var checks []string
		for _, n := range names {
			if len(checks) == 0 || checks[len(checks)-1] != n {
				checks = append(checks, n)
			}
		}
		return checks
	}
	if f := failing(); len(f) != 0 {
		t.Fatalf("audit after migrate up: failing %v", f)
	}
	mustExec(t, d.Pool, "ALTER TABLE sync_commits DISABLE TRIGGER sync_commits_writer_fence")
	if f := strings.Join(failing(), "; "); f != "fence trigger enabled; head-only triggers present and enabled; triggers on the sync tables match the record" {
		t.Fatalf("audit with the trigger disabled: failing %v", f)
	}
	mustExec(t, d.Pool, "ALTER TABLE sync_commits ENABLE TRIGGER sync_commits_writer_fence; GRANT UPDATE ON sync_writer_fence TO sync_writer")
	if f := strings.Join(failing(), "; "); f != "sync roles cannot write the fence, the checkpoints, the marker, the horizon or the epoch; grants match the record" {
		t.Fatalf("audit with a writable fence: failing %v", f)
	}
	// Each later hole is reported by its own check (and by the comparison
	// with the recorded catalog), then closed again.
	for _, c := range []struct{ open, close, check string }{
		{"GRANT UPDATE (horizon_seq) ON sync_partitions TO sync_writer", "REVOKE UPDATE (horizon_seq) ON sync_partitions FROM sync_writer",
			"sync roles cannot write the fence, the checkpoints, the marker, the horizon or the epoch; grants match the record"},
		// A database from before Postgres 15: the migration revoked this.
		{"GRANT CREATE ON SCHEMA public TO PUBLIC", "REVOKE CREATE ON SCHEMA public FROM PUBLIC",
			"PUBLIC cannot create objects in the sync schema or public; sync roles cannot create objects in the sync schema or public"},
		// Another body for upstream's fence function (not upstream's own):
		// gosync's rules are sync_commits_writer_guard's, but the audit
		// names the body it does not know.
		{`CREATE OR REPLACE FUNCTION syncular_writer_fence() RETURNS trigger LANGUAGE plpgsql AS $$
		  BEGIN IF EXISTS (SELECT 1 FROM sync_writer_fence f WHERE f.partition = NEW.partition) THEN NULL; END IF; RETURN NEW; END $$`,
			"", "function definitions match the record"},
	} {
		mustExec(t, d.Pool, "REVOKE UPDATE ON sync_writer_fence FROM sync_writer; "+c.open)
		if f := strings.Join(failing(), "; "); f != c.check {
			t.Fatalf("after %q: failing %v, want [%s]", c.open, f, c.check)
		}
		if c.close != "" {
			mustExec(t, d.Pool, c.close)
		}
	}
	if queryOne[bool](t, d.Pool, "SELECT has_schema_privilege('public', 'public', 'CREATE')") {
		t.Fatal("PUBLIC may create in schema public after migrating")
	}
}

// TestRolesRunTheServices: each service works through the Go API with
// exactly its role: a sync server pushes and reads as sync_writer, a
// backfill worker fills and activates as sync_backfill, an operator bumps the
// schema as sync_admin, a dashboard reads the status as sync_reader.
func TestRolesRunTheServices(t *testing.T) {
	ctx := context.Background()
	d := pgtest.New(t)
	owner := gosync.New(d.Pool)
	if err := owner.EnsureSchema(ctx, todosSchema(1), nil, todosDDL(1)); err != nil {
		t.Fatal(err)
	}
	// The application's own tables are the application's: here the
	// operator's role owns them, so its schema bumps may ALTER them.
	mustExec(t, d.Pool, "ALTER TABLE todos OWNER TO sync_admin")
	admin := gosync.New(loginAs(t, d, "sync_admin", nil))
	writer := gosync.New(loginAs(t, d, "sync_writer", nil))
	backfill := gosync.New(loginAs(t, d, "sync_backfill", nil))
	reader := gosync.New(loginAs(t, d, "sync_reader", nil))

	if _, err := writer.Push(ctx, "p1", todoCommit("v1", 3), serverV1); err != nil {
		t.Fatalf("push as sync_writer: %v", err)
	}
	if _, err := writer.TouchPartition(ctx, "p1"); err != nil {
		t.Fatalf("touch as sync_writer: %v", err)
	}
	bump := &gosync.SchemaChangeOptions{DDL: func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "ALTER TABLE todos ADD COLUMN owner_id text")
		return err
	}}
	if err := admin.EnsureSchema(ctx, todosSchema(2), []gosync.CheckpointDeclaration{{Partition: "p1", Name: "proj", SchemaVersion: 2}}, bump); err != nil {
		t.Fatalf("schema bump as sync_admin: %v", err)
	}
	if _, err := backfill.RunBackfill(ctx, gosync.Backfill{Partition: "p1", Name: "proj", SchemaVersion: 2, Sources: []string{"todos"},
		ApplyRange: func(context.Context, pgx.Tx, string, int64, int64) (int64, error) { return 0, nil }}); err != nil {
		t.Fatalf("backfill as sync_backfill: %v", err)
	}
	srv := gosync.Server{SchemaVersion: 2, Declared: []gosync.CheckpointDeclaration{{Partition: "p1", Name: "proj", SchemaVersion: 2}}}
	if _, err := writer.Push(ctx, "p1", todoCommit("v2", 1), srv); err != nil {
		t.Fatalf("v2 push as sync_writer: %v", err)
	}
	if cursor, err := writer.ReadAuthoritative(ctx, "p1", srv, func(context.Context, pgx.Tx) error { return nil }); err != nil || cursor != 2 {
		t.Fatalf("read as sync_writer: cursor %d, %v", cursor, err)
	}
	rows, err := reader.BarrierStatus(ctx, gosync.StatusFilter{Partition: "p1"})
	if err != nil || len(rows) != 1 || rows[0].State != "activated" {
		t.Fatalf("status as sync_reader: %+v, %v", rows, err)
	}
	if _, err := admin.PruneLog(ctx, "p1", 1); err != nil {
		t.Fatalf("prune as sync_admin: %v", err)
	}
	if _, err := reader.DeclareCheckpoint(ctx, "p1", "x", 3); sqlState(err) != "42501" {
		t.Fatalf("declare as sync_reader: %v, want 42501", err)
	}
}
