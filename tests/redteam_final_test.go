package tests

// The final red-team pass on issue 17: the barrier attacked from a fresh
// migrated database with only the documented roles, and the audit checked
// against bypasses its owner could make. Each TestRedTeamFinal<What> but
// TestRedTeamFinalHeadHolds is an attack that worked before migration 00021
// and the migrator's bounded DDL waits (each comment tells the attack as it
// was); TestRedTeamFinalHeadHolds keeps attempts that were refused already.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gosync/gosync/examples/todos"
	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// auditFailures is every failing audit row, one "check: object" a line.
func auditFailures(t *testing.T, d *pgtest.DB) string {
	t.Helper()
	return queryOne[string](t, d.Pool, `SELECT coalesce(string_agg(check_name || ': ' || coalesce(object, ''), E'\n'), '')
		FROM sync_security_audit() WHERE NOT ok`)
}

// TestRedTeamFinalUnnamedPartitionBlocksBump: a sync_writer login blocks
// every schema bump that declares a projection for every partition, for
// good, with one raw INSERT. Names are "non-empty and at most 512
// characters" only for the functions' arguments; the writer's column grant
// on sync_partitions lets it register any name:
//
//	-- as a login in sync_writer only, READ COMMITTED
//	INSERT INTO sync_partitions (partition) VALUES ('');            -- or repeat('x', 100000)
//	-- then the operator's bump, as sync_admin (or gosync EnsureSchema with AllPartitions):
//	BEGIN; SELECT sync_begin_schema_change(); SELECT sync_set_schema_version(2, ...);
//	SELECT sync_install_all_partitions(ARRAY['todos_by_owner'], 2);
//	-- ERROR 22023 invalid argument: partition must be a non-empty string
//
// sync_install_all_partitions hands every existing partition to
// sync_install_checkpoints, which validates each name. No role below the
// owner can delete a partition row, so every every-partition bump fails from
// then on (the error names no row), and the audit stays clean. The same
// holds for a name longer than 512 characters (a compressible 100 kB name
// fits the primary key).
func TestRedTeamFinalUnnamedPartitionBlocksBump(t *testing.T) {
	for name, partition := range map[string]string{
		"empty name":    "",
		"100 kB name":   strings.Repeat("x", 100000),
		"513 character": strings.Repeat("y", 513),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			d, s := v1DB(t)
			writer := loginAs(t, d, "sync_writer", nil)
			seedPartition(t, writer, "p1")
			_, err := writer.Exec(ctx, `INSERT INTO sync_partitions (partition) VALUES ($1)`, partition)
			if err != nil {
				t.Logf("the writer's INSERT was refused (the fix): %v", err)
				return
			}
			if f := auditFailures(t, d); f == "" {
				t.Errorf("audit: every row ok after a writer registered a partition the bump cannot declare")
			}
			everywhere := []gosync.CheckpointDeclaration{{AllPartitions: true, Name: todos.Projection, SchemaVersion: 2}}
			if err := s.EnsureSchema(ctx, todosSchema(2), everywhere, todosDDL(2)); err != nil {
				t.Fatalf("the every-partition bump fails after a sync_writer's raw INSERT of partition %.20q (len %d): %v",
					partition, len(partition), err)
			}
			if got := fenceOf(t, d.Pool, "p1"); got != 2 {
				t.Fatalf("p1 fence = %d, want 2", got)
			}
		})
	}
}

// TestRedTeamFinalAuditBlindSpots: catalog changes on the sync tables that
// turn a rule off or make the log lie, and that sync_security_audit() does
// not see (every row stays ok). Each needs the tables' owner (a bypass role
// in the trust model), but the audit exists to catch exactly those: the
// snapshot it compares (sync_catalog_snapshot) records functions, grants,
// owners, triggers, views and row-level security, not column defaults,
// rules, constraints/indexes or inheritance children.
//
//   - column default: ALTER TABLE sync_commits ALTER COLUMN writer_version
//     SET DEFAULT 2147483647; an upstream writer from before 0.23 (its INSERT
//     names no writer_version) then passes every fence.
//   - rule: CREATE RULE r AS ON INSERT TO sync_changes DO INSTEAD NOTHING;
//     sync_push then stores commits without their changes, and an
//     activation's coverage check (which reads sync_changes) certifies a
//     projection over changes it never saw.
//   - constraint: ALTER TABLE sync_commits DROP CONSTRAINT sync_commits_pkey;
//     a writer appends two commits at the same seq.
//   - inheritance: CREATE TABLE x () INHERITS (sync_writer_fence); the fence
//     trigger reads the parent with its children.
//   - data: UPDATE sync_writer_fence SET required_writer_version = 1 under a
//     declared v2 checkpoint (the audit reads only the catalog).
//   - the version table: GRANT INSERT, UPDATE, DELETE ON gosync_db_version TO
//     sync_writer (only sync_* relations are recorded).
func TestRedTeamFinalAuditBlindSpots(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, ddl string
		effect    func(t *testing.T, d *pgtest.DB)
	}{
		{"column default on writer_version", `ALTER TABLE sync_commits ALTER COLUMN writer_version SET DEFAULT 2147483647`,
			func(t *testing.T, d *pgtest.DB) {
				writer := loginAs(t, d, "sync_writer", nil)
				// An upstream writer before 0.23: no writer_version column.
				err := pgx.BeginFunc(ctx, writer, func(tx pgx.Tx) error {
					var seq int64
					if err := tx.QueryRow(ctx, `UPDATE sync_partitions SET max_commit_seq = max_commit_seq + 1
						WHERE partition = 'p1' RETURNING max_commit_seq`).Scan(&seq); err != nil {
						return err
					}
					_, err := tx.Exec(ctx, `INSERT INTO sync_commits (partition, commit_seq, client_id, client_commit_id, actor_id, created_at_ms)
						VALUES ('p1', $1, 'old', 'old-1', 'u1', 0)`, seq)
					return err
				})
				if err == nil {
					t.Logf("a pre-0.23 writer passed the v2 fence of p1 (the default stamped it)")
				}
			}},
		{"rule on sync_changes", `CREATE RULE drop_changes AS ON INSERT TO sync_changes DO INSTEAD NOTHING`,
			func(t *testing.T, d *pgtest.DB) {
				s := gosync.New(d.Pool)
				if _, err := s.Push(ctx, "p2", todoCommit("ruled", 2), serverV2); err == nil &&
					queryOne[int64](t, d.Pool, `SELECT count(*) FROM sync_changes`) == 0 {
					t.Logf("a push was applied and stored no change")
				}
			}},
		{"primary key of sync_commits dropped", `ALTER TABLE sync_commits DROP CONSTRAINT sync_commits_pkey`, nil},
		{"inheritance child of sync_writer_fence", `CREATE TABLE fence_shadow () INHERITS (sync_writer_fence)`, nil},
		// Data, not catalog: the audit reads only the catalog, so a fence the
		// owner lowered under a declared checkpoint (what an adopted upstream
		// login could do before 00017) leaves every row ok.
		{"fence lowered under a declared checkpoint", `UPDATE sync_writer_fence SET required_writer_version = 1 WHERE partition = 'p1'`, nil},
		// The goose version table is not a sync_* relation: a write grant on
		// it to a sync role (a writer could then mark a future hardening
		// migration applied, so migrate up skips it) is not audited.
		{"write grant on the version table to sync_writer", `GRANT INSERT, UPDATE, DELETE ON gosync_db_version TO sync_writer`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, _ := readyDB(t)
			if f := auditFailures(t, d); f != "" {
				t.Fatalf("audit not clean before the change:\n%s", f)
			}
			mustExec(t, d.Pool, c.ddl) // as the owner (the harness's superuser ran the migrations)
			if c.effect != nil {
				c.effect(t, d)
			}
			if f := auditFailures(t, d); f == "" {
				t.Fatalf("%s: every audit row ok after %q", c.name, c.ddl)
			}
		})
	}
}

// TestRedTeamFinalRegistryStampUnbounded: 00021 bounds sync_touch_partition's
// now_ms (a stamp years ahead reads as a live session forever), but the
// sync_writer column grant on last_authenticated_at_ms takes any value:
//
//	-- as a login in sync_writer only
//	UPDATE sync_partition_registry SET last_authenticated_at_ms = 9223372036854775807;
//
// (low: nothing in gosync reads the stamp today.)
func TestRedTeamFinalRegistryStampUnbounded(t *testing.T) {
	ctx := context.Background()
	d := pgtest.New(t)
	writer := loginAs(t, d, "sync_writer", nil)
	mustExec(t, writer, `SELECT FROM sync_touch_partition('p1')`)
	if _, err := writer.Exec(ctx, `UPDATE sync_partition_registry SET last_authenticated_at_ms = 9223372036854775807 WHERE partition = 'p1'`); err == nil {
		t.Fatalf("a sync_writer stamped last_authenticated_at_ms = 2^63-1, past the bound sync_touch_partition enforces")
	}
}

// TestRedTeamFinalHeadHolds: attempts on the head rule that were refused. A
// hole at p1's head (a seq allocated by a writer that committed nothing),
// then, each in its own transaction, under every isolation level:
//   - writer: upsert with ON CONFLICT DO UPDATE SET max_commit_seq = EXCLUDED.max_commit_seq (a touch at head 1);
//   - writer: one statement allocating in a CTE and committing at the old head;
//   - writer: allocate, then move the head back (-1);
//   - writer: allocate in a SAVEPOINT, ROLLBACK TO, commit at the hole;
//   - sync_admin + sync_writer: prune through a seq below the horizon (an owner touch), then commit at the hole;
//   - sync_admin + sync_writer: SAVEPOINT, re-declare (an owner touch), RELEASE, SAVEPOINT, commit at the hole;
//   - sync_admin + sync_writer: allocate and commit at head+1 in a SAVEPOINT, re-declare, ROLLBACK TO, commit at the hole.
func TestRedTeamFinalHeadHolds(t *testing.T) {
	ctx := context.Background()
	attempts := map[string][]string{
		"upsert setting the head to EXCLUDED": {
			`INSERT INTO sync_partitions (partition, max_commit_seq) VALUES ('p1', 1)
			 ON CONFLICT (partition) DO UPDATE SET max_commit_seq = EXCLUDED.max_commit_seq`,
			`INSERT INTO sync_commits VALUES ('p1', 1, 'c', 'late', 'a', 0, 9)`},
		"CTE allocation, commit at the old head": {
			`WITH a AS (UPDATE sync_partitions SET max_commit_seq = max_commit_seq + 1 WHERE partition = 'p1' RETURNING max_commit_seq)
			 INSERT INTO sync_commits SELECT 'p1', a.max_commit_seq - 1, 'c', 'late', 'a', 0, 9 FROM a`},
		"allocate then move back": {
			`UPDATE sync_partitions SET max_commit_seq = max_commit_seq + 1 WHERE partition = 'p1'`,
			`UPDATE sync_partitions SET max_commit_seq = max_commit_seq - 1 WHERE partition = 'p1'`,
			`INSERT INTO sync_commits VALUES ('p1', 1, 'c', 'late', 'a', 0, 9)`},
		"savepoint allocation rolled back": {
			`SAVEPOINT s`, `UPDATE sync_partitions SET max_commit_seq = max_commit_seq + 1 WHERE partition = 'p1'`,
			`ROLLBACK TO s`, `INSERT INTO sync_commits VALUES ('p1', 1, 'c', 'late', 'a', 0, 9)`},
		"admin+writer: prune below the horizon": {
			`SELECT sync_prune_log('p1', 0)`, `INSERT INTO sync_commits VALUES ('p1', 1, 'c', 'late', 'a', 0, 9)`},
		"admin+writer: re-declare in a released savepoint": {
			`SAVEPOINT s`, `SELECT sync_install_checkpoint('p1', 'todos_by_owner', 2)`, `RELEASE s`, `SAVEPOINT t`,
			`INSERT INTO sync_commits VALUES ('p1', 1, 'c', 'late', 'a', 0, 9)`},
		"admin+writer: touch over an own commit, then roll the commit back": {
			`SAVEPOINT s`, `UPDATE sync_partitions SET max_commit_seq = max_commit_seq + 1 WHERE partition = 'p1'`,
			`INSERT INTO sync_commits VALUES ('p1', 2, 'c', 'next', 'a', 0, 9)`,
			`SAVEPOINT t`, `SELECT sync_install_checkpoint('p1', 'todos_by_owner', 2)`, `ROLLBACK TO s`,
			`INSERT INTO sync_commits VALUES ('p1', 1, 'c', 'late', 'a', 0, 9)`},
	}
	d, _ := readyDB(t)
	writer := loginAs(t, d, "sync_writer", nil)
	both, _ := multiLogin(t, d, "adminwriter", "sync_admin", "sync_writer")
	if hole := makeHole(t, writer, "p1"); hole != 1 {
		t.Fatalf("hole at %d, want 1", hole)
	}
	before := attackState(t, d)
	for name, stmts := range attempts {
		for _, iso := range isoLevels {
			t.Run(name+"/"+string(iso), func(t *testing.T) {
				pool := writer
				if strings.HasPrefix(name, "admin+writer") {
					pool = both
				}
				err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: iso}, func(tx pgx.Tx) error {
					for _, s := range stmts {
						if _, err := tx.Exec(ctx, s); err != nil {
							return err
						}
					}
					return nil
				})
				refusedWith(t, err, "sync.storage.commit_not_at_head", "sync.storage.partition_seq_rejected")
			})
		}
	}
	if after := attackState(t, d); after != before {
		t.Fatalf("state moved:\n%s", lineDiff(before, after))
	}
}

// TestRedTeamFinalMigrationTableLockUnbounded: the migration lock's wait is
// bounded and names its holder, but a migration's own DDL then waits for the
// sync tables' locks without bound, naming nobody. A sync_reader login (it
// only reads) holds one in a prepared transaction:
//
//	-- as a login in sync_reader only
//	BEGIN; SELECT count(*) FROM sync_installed_catalog; PREPARE TRANSACTION 'rd';
//	-- then the operator, as the owner:
//	gosync migrate down; gosync migrate down   -- 00021, then 00020: DROP TABLE sync_installed_catalog
//
// migrate down hangs until the prepared transaction is ended by its owner
// or a superuser (verified with the CLI: still waiting after 40 s, no
// message). Any later migration that ALTERs or DROPs a sync table hangs
// `migrate up` the same way. The audit does show the prepared transaction
// (severity: low, a denial of migrations by the least role).
func TestRedTeamFinalMigrationTableLockUnbounded(t *testing.T) {
	d := pgtest.New(t)
	u, _ := loginURL(t, d, "sync_reader")
	conn, err := pgx.Connect(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	prepare(t, d, conn, "rd_"+d.Name, `SELECT count(*) FROM sync_installed_catalog`)
	m, err := gosync.NewMigrator(context.Background(), d.Pool, gosync.WithLockTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	start := time.Now()
	_, err = m.DownTo(ctx, 19) // 00021, then 00020: DROP TABLE sync_installed_catalog
	if took := time.Since(start); err == nil || took > 10*time.Second || !strings.Contains(err.Error(), "rd_"+d.Name) {
		t.Fatalf("migrate down behind a sync_reader's prepared transaction: %v after %s; want a bounded wait and an error naming it", err, took.Round(time.Second))
	}
}

// TestRedTeamFinalAuditNoiseFromTempFunction: any member of a sync role can
// turn the audit red for everyone, for as long as its session lives, with
// an object that is nothing of gosync's:
//
//	-- as a login in sync_reader (or any sync role) only
//	SET ROLE sync_reader;
//	CREATE FUNCTION pg_temp.f() RETURNS int LANGUAGE sql SECURITY DEFINER AS 'SELECT 1';
//
// sync_catalog_snapshot() takes every SECURITY DEFINER function owned by a
// sync role in any schema, the other sessions' pg_temp_N included, so the
// operator's audit fails "every SECURITY DEFINER function is recorded as
// such" and "one role owns every gosync object" on pg_temp_N.f() (low: a
// false alarm the least role can raise at will, which trains operators to
// ignore the audit).
func TestRedTeamFinalAuditNoiseFromTempFunction(t *testing.T) {
	ctx := context.Background()
	d := pgtest.New(t)
	u, _ := loginURL(t, d, "sync_reader")
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	mustExec(t, conn, `SET ROLE sync_reader`)
	mustExec(t, conn, `CREATE FUNCTION pg_temp.f() RETURNS int LANGUAGE sql SECURITY DEFINER AS 'SELECT 1'`)
	if f := auditFailures(t, d); f != "" {
		t.Fatalf("a sync_reader's temporary function fails the operator's audit:\n%s", f)
	}
}
