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

// The red-team suite: the barrier attacked with only the documented roles
// (real login roles, real interleaved sessions). Each test is one hole that
// was open before migration 00007; after every refused attempt the database
// must be unchanged.

// logState is everything an attack could move: the barrier tables, the log
// counts, the horizon and the epochs.
func attackState(t *testing.T, d *pgtest.DB) string {
	t.Helper()
	var s string
	err := d.Pool.QueryRow(context.Background(), `SELECT concat_ws(' | ',
		(SELECT count(*) FROM sync_commits), (SELECT count(*) FROM sync_changes),
		(SELECT count(*) FROM sync_change_scopes), (SELECT count(*) FROM sync_push_results),
		(SELECT string_agg(format('%s', r), ',' ORDER BY partition) FROM sync_partition_registry r))`).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return barrierState(t, d) + " | " + s
}

// TestRedTeamStaleSnapshotFence: a writer whose REPEATABLE READ or
// SERIALIZABLE snapshot predates a fence raise (by a declare, or by a schema
// bump's install) tries to append below the fence through every path. It
// must fail (40001 or a barrier error) and store nothing. In READ COMMITTED
// the same writer is rejected by the fence, as before.
func TestRedTeamStaleSnapshotFence(t *testing.T) {
	ctx := context.Background()
	type path struct {
		name   string
		append func(tx pgx.Tx, partition string) error
	}
	paths := []path{
		{"sync_append_commit", func(tx pgx.Tx, p string) error {
			_, err := tx.Exec(ctx, `SELECT sync_append_commit($1, 'c', 'stale', 'a', 0, 1, '{todos}', '{r}', '{1}', '{1}', '{"{}"}', '{NULL}')`, p)
			return err
		}},
		{"upstream-shaped push, writer_version 1", func(tx pgx.Tx, p string) error { _, err := upstreamPushTx(ctx, tx, p, "stale", v(1)); return err }},
		{"upstream-shaped push, writer_version NULL", func(tx pgx.Tx, p string) error { _, err := upstreamPushTx(ctx, tx, p, "stale", nil); return err }},
		{"raw INSERT, no allocation", func(tx pgx.Tx, p string) error {
			_, err := tx.Exec(ctx, `INSERT INTO sync_commits VALUES ($1, (SELECT coalesce(max(commit_seq), 0) + 1 FROM sync_commits WHERE partition = $1), 'c', 'stale', 'a', 0, NULL)`, p)
			return err
		}},
		{"Store.WithTx(tx).Push", func(tx pgx.Tx, p string) error {
			_, err := gosync.New(nil).WithTx(tx).Push(ctx, p, todoCommit("stale", 1), gosync.Server{SchemaVersion: 1})
			return err
		}},
	}
	raises := map[string]string{
		"declare": `SELECT sync_declare_checkpoint($1, 'proj', 2)`,
		"bump":    `SELECT sync_begin_schema_change(), sync_install_checkpoint($1, 'proj', 2)`,
	}
	d := pgtest.New(t)
	admin := loginAs(t, d, "sync_admin", nil)
	writer := loginAs(t, d, "sync_writer", nil)
	n := 0
	for _, iso := range []pgx.TxIsoLevel{pgx.RepeatableRead, pgx.Serializable, pgx.ReadCommitted} {
		for raiseName, raise := range raises {
			for _, existing := range []bool{true, false} {
				for _, p := range paths {
					n++
					partition := fmt.Sprintf("p%d", n)
					name := fmt.Sprintf("%s/%s/existing partition %v/%s", iso, raiseName, existing, p.name)
					t.Run(name, func(t *testing.T) {
						if existing { // the partition has a commit of its v1 writer
							if err := pgx.BeginFunc(ctx, writer, func(tx pgx.Tx) error {
								_, err := upstreamPushTx(ctx, tx, partition, "before", v(1))
								return err
							}); err != nil {
								t.Fatal(err)
							}
						}
						tx, err := writer.BeginTx(ctx, pgx.TxOptions{IsoLevel: iso})
						if err != nil {
							t.Fatal(err)
						}
						defer tx.Rollback(ctx)
						// The writer's snapshot is taken here, before the fence.
						mustExec(t, tx, "SELECT count(*) FROM sync_writer_fence")
						mustExec(t, admin, raise, partition)
						before := attackState(t, d)
						err = p.append(tx, partition)
						if err == nil {
							err = tx.Commit(ctx)
						}
						code := sqlState(err)
						mapped := gosync.MapError(err)
						refused := code == "40001" || errors.Is(mapped, gosync.ErrWriterFenceRejected) ||
							errors.Is(mapped, gosync.ErrCommitNotAtHead) || errors.As(mapped, new(*gosync.NotReadyError))
						if !refused {
							t.Fatalf("stale writer appended below the fence: err = %v (SQLSTATE %q)", err, code)
						}
						_ = tx.Rollback(ctx)
						if after := attackState(t, d); after != before {
							t.Fatalf("a refused append changed the database:\nbefore %s\nafter  %s", before, after)
						}
					})
				}
			}
		}
	}
}

// TestRedTeamWriterTables: what a sync_writer login can do with the tables it
// is granted. The upstream push path works; every attack is refused and
// changes nothing.
func TestRedTeamWriterTables(t *testing.T) {
	ctx := context.Background()
	d := pgtest.New(t)
	storeTables(t, d, 1, "todos", "notes")
	writer := loginAs(t, d, "sync_writer", nil)
	admin := gosync.New(d.Pool)

	// The upstream server's push path, as a sync_writer login: allocate with
	// INSERT ... ON CONFLICT and with a plain UPDATE, commit, change, scope,
	// push result, registry upsert of last_authenticated_at_ms.
	if err := pgx.BeginFunc(ctx, writer, func(tx pgx.Tx) error {
		for i := 1; i <= 3; i++ {
			if _, err := upstreamPushTx(ctx, tx, "p1", fmt.Sprintf("c%d", i), v(1)); err != nil {
				return err
			}
		}
		var seq int64
		if err := tx.QueryRow(ctx, `UPDATE sync_partitions SET max_commit_seq = max_commit_seq + 1 WHERE partition = 'p1' RETURNING max_commit_seq`).Scan(&seq); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO sync_commits VALUES ('p1', $1, 'c', 'cc4', 'a', 0, 1)`, seq); err != nil {
			return err
		}
		// One statement with sibling CTEs (commit and changes together) too.
		if _, err := tx.Exec(ctx, bareAppend, "p0", "c", "one-statement", []string{"r1", "r2"}); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO sync_partition_registry AS r VALUES ('p1', 'e1', false, 1)
			ON CONFLICT (partition) DO UPDATE SET last_authenticated_at_ms = EXCLUDED.last_authenticated_at_ms`)
		return err
	}); err != nil {
		t.Fatalf("the upstream push path as sync_writer: %v", err)
	}
	// A checkpoint activated at the head (4), and the log pruned through 2.
	if _, err := admin.DeclareCheckpoint(ctx, "p1", "proj", 1); err != nil {
		t.Fatal(err)
	}
	cp, err := admin.ClaimCheckpoint(ctx, "p1", "proj", 1)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := admin.AdvanceCheckpoint(ctx, gosync.CheckpointAdvance{Partition: "p1", Name: "proj", OwnerEpoch: cp.OwnerEpoch, Watermark: 4, ObservedRows: 4}); err != nil || !ok {
		t.Fatalf("advance: %v, %v", ok, err)
	}
	if r, err := admin.ActivateCheckpoint(ctx, gosync.CheckpointActivation{Partition: "p1", Name: "proj", OwnerEpoch: cp.OwnerEpoch, Watermark: 4, Sources: []string{"todos"}}); err != nil || r != gosync.ActivationActivated {
		t.Fatalf("activate: %v, %v", r, err)
	}
	if _, err := admin.PruneLog(ctx, "p1", 2); err != nil {
		t.Fatal(err)
	}

	attacks := []struct{ name, sql, want string }{
		{"orphan change under an old commit (below the watermark)", `INSERT INTO sync_changes VALUES ('p1', 3, 5, 'todos', 'x', 1, 1, '{}', NULL)`, "sync.storage.change_without_commit"},
		{"change for a far-future seq", `INSERT INTO sync_changes VALUES ('p1', 1000000000, 0, 'todos', 'x', 1, 1, '{}', NULL)`, "sync.storage.change_without_commit"},
		{"change scope for an old commit", `INSERT INTO sync_change_scopes VALUES ('p1', 'todos', 'owner', 'evil', 3)`, "sync.storage.change_without_commit"},
		{"commit below the head (back-dating)", `INSERT INTO sync_commits VALUES ('p1', 3, 'c', 'x', 'a', 0, 1)`, "sync.storage.commit_not_at_head"},
		{"commit below the horizon", `INSERT INTO sync_commits VALUES ('p1', 1, 'c', 'x', 'a', 0, 1)`, "sync.storage.commit_not_at_head"},
		{"commit at the next seq without allocating", `INSERT INTO sync_commits VALUES ('p1', 5, 'c', 'x', 'a', 0, 1)`, "sync.storage.commit_not_at_head"},
		{"commit far in the future", `INSERT INTO sync_commits VALUES ('p1', 1000000000, 'c', 'x', 'a', 0, 1)`, "sync.storage.commit_not_at_head"},
		{"head jumped far ahead", `UPDATE sync_partitions SET max_commit_seq = max_commit_seq + 1000000 WHERE partition = 'p1'`, "sync.storage.partition_seq_rejected"},
		{"head moved back", `UPDATE sync_partitions SET max_commit_seq = 1 WHERE partition = 'p1'`, "sync.storage.partition_seq_rejected"},
		{"new partition created far ahead", `INSERT INTO sync_partitions VALUES ('p9', 1000000, 0)`, "sync.storage.partition_seq_rejected"},
		{"horizon lowered", `UPDATE sync_partitions SET horizon_seq = 0 WHERE partition = 'p1'`, "42501"},
		{"epoch rotated", `UPDATE sync_partition_registry SET log_epoch = 'mine' WHERE partition = 'p1'`, "42501"},
		{"epoch required flipped", `UPDATE sync_partition_registry SET epoch_required = true WHERE partition = 'p1'`, "42501"},
		{"partitions locked for everyone", `LOCK TABLE sync_partitions IN ACCESS EXCLUSIVE MODE`, "42501"},
		{"partitions locked against writers", `LOCK TABLE sync_partitions IN EXCLUSIVE MODE`, "42501"},
		{"commits deleted", `DELETE FROM sync_commits`, "42501"},
		{"log pruned", `SELECT sync_prune_log('p1', 3)`, "42501"},
		{"epoch rotated by function", `SELECT sync_rotate_log_epoch('p1')`, "42501"},
	}
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			before := attackState(t, d)
			err := pgx.BeginFunc(ctx, writer, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, a.sql)
				return err
			})
			if err == nil {
				t.Fatalf("accepted: %s", a.sql)
			}
			if sqlState(err) != a.want && !strings.Contains(err.Error(), a.want) {
				t.Fatalf("err = %v, want %s", err, a.want)
			}
			if after := attackState(t, d); after != before {
				t.Fatalf("a refused attack changed the database:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
	// The horizon and epoch stayed: a later activation over the pruned log
	// is still unverifiable, never activated.
	if _, err := admin.DeclareCheckpoint(ctx, "p1", "late", 1); err != nil {
		t.Fatal(err)
	}
	late, err := admin.ClaimCheckpoint(ctx, "p1", "late", 1)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := admin.ActivateCheckpoint(ctx, gosync.CheckpointActivation{Partition: "p1", Name: "late", OwnerEpoch: late.OwnerEpoch, Watermark: 0, Sources: []string{"notes"}}); err != nil || r != gosync.ActivationUnverifiable {
		t.Fatalf("activation over the pruned log = %q, %v; want unverifiable", r, err)
	}
}

// TestRedTeamLifecycleOutOfOrder: the lifecycle calls of section 3 through
// the Go API, as a sync_backfill login. Each refused call returns its "no"
// (false, stale) or an error, and changes nothing.
func TestRedTeamLifecycleOutOfOrder(t *testing.T) {
	ctx := context.Background()
	d := pgtest.New(t)
	storeTables(t, d, 2, "todos", "other")
	admin := gosync.New(d.Pool)
	worker := gosync.New(loginAs(t, d, "sync_backfill", nil))
	for i := 0; i < 3; i++ {
		mustPush(t, d.Pool, "p1", "todos", 2)
	}
	if _, err := admin.DeclareCheckpoint(ctx, "p1", "proj", 2); err != nil {
		t.Fatal(err)
	}
	refused := func(what string, call func() error) {
		t.Helper()
		before := attackState(t, d)
		if err := call(); err != nil {
			t.Logf("%s: %v", what, err)
		}
		if after := attackState(t, d); after != before {
			t.Fatalf("%s changed the database:\nbefore %s\nafter  %s", what, before, after)
		}
	}
	no := func(ok bool, err error) error {
		if ok || err != nil {
			return fmt.Errorf("got %v, %v; want false", ok, err)
		}
		return nil
	}
	stale := func(r gosync.ActivationResult, err error) error {
		if r != gosync.ActivationStale || err != nil {
			return fmt.Errorf("got %q, %v; want stale", r, err)
		}
		return nil
	}
	check := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	refused("advance of a declared row with epoch 0", func() error {
		err := no(worker.AdvanceCheckpoint(ctx, gosync.CheckpointAdvance{Partition: "p1", Name: "proj", OwnerEpoch: 0, Watermark: 2, ObservedRows: 2}))
		check("advance epoch 0", err)
		return err
	})
	refused("activation of a declared row with epoch 0", func() error {
		err := stale(worker.ActivateCheckpoint(ctx, gosync.CheckpointActivation{Partition: "p1", Name: "proj", OwnerEpoch: 0, Watermark: 0, Sources: []string{"todos"}}))
		check("activate epoch 0", err)
		return err
	})
	refused("claim at another version", func() error {
		_, err := worker.ClaimCheckpoint(ctx, "p1", "proj", 3)
		if !errors.Is(err, gosync.ErrCheckpointNotDeclared) {
			t.Fatalf("claim at v3: %v, want ErrCheckpointNotDeclared", err)
		}
		return err
	})
	cp, err := worker.ClaimCheckpoint(ctx, "p1", "proj", 2)
	check("claim", err)
	ok, err := worker.AdvanceCheckpoint(ctx, gosync.CheckpointAdvance{Partition: "p1", Name: "proj", OwnerEpoch: cp.OwnerEpoch, Watermark: 2, ObservedRows: 2})
	check("advance", no(!ok, err))
	refused("a watermark going down", func() error {
		_, err := worker.AdvanceCheckpoint(ctx, gosync.CheckpointAdvance{Partition: "p1", Name: "proj", OwnerEpoch: cp.OwnerEpoch, Watermark: 1, ObservedRows: 1})
		if !errors.Is(err, gosync.ErrInvalidArgument) {
			t.Fatalf("lower watermark: %v, want ErrInvalidArgument", err)
		}
		return err
	})
	refused("a watermark past the head", func() error {
		_, err := worker.AdvanceCheckpoint(ctx, gosync.CheckpointAdvance{Partition: "p1", Name: "proj", OwnerEpoch: cp.OwnerEpoch, Watermark: 4, ObservedRows: 4})
		if !errors.Is(err, gosync.ErrInvalidArgument) {
			t.Fatalf("watermark past the head: %v, want ErrInvalidArgument", err)
		}
		return err
	})
	refused("activation above the stored watermark", func() error {
		err := stale(worker.ActivateCheckpoint(ctx, gosync.CheckpointActivation{Partition: "p1", Name: "proj", OwnerEpoch: cp.OwnerEpoch, Watermark: 3, Sources: []string{"other"}}))
		check("activate at 3 (stored 2)", err)
		return err
	})
	r, err := worker.ActivateCheckpoint(ctx, gosync.CheckpointActivation{Partition: "p1", Name: "proj", OwnerEpoch: cp.OwnerEpoch, Watermark: 2, Sources: []string{"other"}})
	if err != nil || r != gosync.ActivationActivated {
		t.Fatalf("activate at the stored watermark: %q, %v", r, err)
	}
	refused("advance after activation", func() error {
		err := no(worker.AdvanceCheckpoint(ctx, gosync.CheckpointAdvance{Partition: "p1", Name: "proj", OwnerEpoch: cp.OwnerEpoch, Watermark: 3, ObservedRows: 3}))
		check("advance after activation", err)
		return err
	})
}

// TestRedTeamIllFormedArguments: section 4 through the SQL interface, with
// each role's own login.
func TestRedTeamIllFormedArguments(t *testing.T) {
	ctx := context.Background()
	d := pgtest.New(t)
	admin := loginAs(t, d, "sync_admin", nil)
	writer := loginAs(t, d, "sync_writer", nil)
	cases := []struct {
		name string
		pool *pgxpool.Pool
		sql  string
	}{
		{"marker version above 2^31-1", admin, `SELECT sync_begin_schema_change(), sync_set_schema_version(3000000000)`},
		{"layouts of the wrong shape", admin, `SELECT sync_begin_schema_change(), sync_set_schema_version(2, '{"todos": 5}')`},
		{"layout column without a type", admin, `SELECT sync_begin_schema_change(), sync_set_schema_version(2, '{"todos": [{"name": "id", "nullable": true}]}')`},
		{"empty row id", writer, `SELECT sync_append_commit('p1', 'c', 'x', 'a', 0, 1, '{todos}', ARRAY[''], '{1}', '{NULL}', '{"{}"}', '{NULL}')`},
		{"10 MB row id", writer, `SELECT sync_append_commit('p1', 'c', 'x', 'a', 0, 1, '{todos}', ARRAY[repeat('r', 10000000)], '{1}', '{NULL}', '{"{}"}', '{NULL}')`},
		{"negative row version", writer, `SELECT sync_append_commit('p1', 'c', 'x', 'a', 0, 1, '{todos}', '{r}', '{1}', '{-5}', '{"{}"}', '{NULL}')`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := attackState(t, d)
			var marker int64
			_ = d.Pool.QueryRow(ctx, "SELECT coalesce(max(schema_version), 0) FROM sync_schema_meta").Scan(&marker)
			err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, c.sql)
				return err
			})
			if sqlState(err) != "22023" || !errors.Is(gosync.MapError(err), gosync.ErrInvalidArgument) {
				t.Fatalf("err = %v, want 22023 / ErrInvalidArgument", err)
			}
			var after int64
			_ = d.Pool.QueryRow(ctx, "SELECT coalesce(max(schema_version), 0) FROM sync_schema_meta").Scan(&after)
			if a := attackState(t, d); a != before || after != marker {
				t.Fatalf("refused call changed the database:\nbefore %s (marker %d)\nafter  %s (marker %d)", before, marker, a, after)
			}
		})
	}
}
