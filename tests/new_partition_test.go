package tests

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gosync/gosync/examples/todos"
	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// A projection declared for every partition must hold for the partitions
// created after the declaration: the fence (an old writer cannot create a
// partition and append at its old version) and the gate (a new server
// serves the new partition only when its projection is complete).

// everywhere is todos_by_owner declared in every partition at v2.
var everywhere = []gosync.CheckpointDeclaration{{AllPartitions: true, Name: todos.Projection, SchemaVersion: 2}}

// newPartitionWrites are the ways a writer creates a partition with its
// first commit at writer version wv.
var newPartitionWrites = []struct {
	name  string
	write func(ctx context.Context, tx pgx.Tx, partition string, wv *int64) error
}{
	{"upstream push (lock, then allocate and commit)", func(ctx context.Context, tx pgx.Tx, p string, wv *int64) error {
		// push-path.md A.1: 25, 26, then 44-45 (todos.OldWriterCommit) and the rest.
		if _, err := tx.Exec(ctx, `INSERT INTO sync_partitions(partition, max_commit_seq) VALUES ($1, 0) ON CONFLICT (partition) DO NOTHING`, p); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT max_commit_seq FROM sync_partitions WHERE partition = $1 FOR UPDATE`, p); err != nil {
			return err
		}
		_, err := upstreamPushTx(ctx, tx, p, "first", wv)
		return err
	}},
	{"upstream allocation and commit in one statement", func(ctx context.Context, tx pgx.Tx, p string, wv *int64) error {
		_, err := upstreamPushTx(ctx, tx, p, "first", wv)
		return err
	}},
	{"sync_append_commit", func(ctx context.Context, tx pgx.Tx, p string, wv *int64) error {
		_, err := tx.Exec(ctx, `SELECT sync_append_commit($1, 'c', 'first', 'a', 0, $2, '{todos}', '{r}', '{1}', '{1}', '{"{}"}', '{NULL}')`, p, wv)
		return err
	}},
	{"sync_lock_partition, then a raw allocation and commit", func(ctx context.Context, tx pgx.Tx, p string, wv *int64) error {
		if _, err := tx.Exec(ctx, `SELECT FROM sync_lock_partition($1)`, p); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `WITH a AS (UPDATE sync_partitions SET max_commit_seq = max_commit_seq + 1 WHERE partition = $1 RETURNING max_commit_seq)
			INSERT INTO sync_commits SELECT $1, a.max_commit_seq, 'c', 'first', 'a', 0, $2 FROM a`, p, wv)
		return err
	}},
}

// refusedAsStaleOrFenced: the error a writer below the fence (or with a
// snapshot older than it) must get.
func refusedAsStaleOrFenced(err error) bool {
	mapped := gosync.MapError(err)
	return sqlState(err) == "40001" || errors.Is(mapped, gosync.ErrWriterFenceRejected) ||
		errors.As(mapped, new(*gosync.NotReadyError))
}

// TestRedTeamNewPartitionAfterEveryPartitionDeclaration: after a bump that
// declares todos_by_owner in every partition, a v1 writer (a sync_writer
// login) creates a new partition through every path, under every
// isolation level: refused, nothing changed. A v2 writer creates one: the
// partition is fenced at 2 and its checkpoint activated (no history), so a
// v2 server serves it and pushes to it.
func TestRedTeamNewPartitionAfterEveryPartitionDeclaration(t *testing.T) {
	ctx := context.Background()
	d, s := v1DB(t)
	writer := loginAs(t, d, "sync_writer", nil)
	mustPush(t, writer, "existing", "todos", 1)
	if err := s.EnsureSchema(ctx, todosSchema(2), everywhere, todosDDL(2)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, iso := range []pgx.TxIsoLevel{pgx.ReadCommitted, pgx.RepeatableRead, pgx.Serializable} {
		for _, w := range newPartitionWrites {
			for _, wv := range []*int64{v(1), nil} {
				n++
				partition := fmt.Sprintf("new%d", n)
				t.Run(fmt.Sprintf("%s/%s/writer_version %v", iso, w.name, wv != nil), func(t *testing.T) {
					before := attackState(t, d)
					err := pgx.BeginTxFunc(ctx, writer, pgx.TxOptions{IsoLevel: iso}, func(tx pgx.Tx) error {
						return w.write(ctx, tx, partition, wv)
					})
					if !refusedAsStaleOrFenced(err) {
						t.Fatalf("a v1 writer created partition %s after an every-partition declaration: err = %v", partition, err)
					}
					if after := attackState(t, d); after != before {
						t.Fatalf("a refused write changed the database:\nbefore %s\nafter  %s", before, after)
					}
				})
			}
		}
		t.Run(fmt.Sprintf("%s/old gosync server push", iso), func(t *testing.T) {
			before := attackState(t, d)
			err := pgx.BeginTxFunc(ctx, writer, pgx.TxOptions{IsoLevel: iso}, func(tx pgx.Tx) error {
				_, err := gosync.New(nil).WithTx(tx).Push(ctx, "new-by-v1-server", todoCommit("c", 1), serverV1)
				return err
			})
			if !refusedAsStaleOrFenced(err) {
				t.Fatalf("a v1 server pushed to a new partition: %v", err)
			}
			if after := attackState(t, d); after != before {
				t.Fatalf("a refused push changed the database:\nbefore %s\nafter  %s", before, after)
			}
		})
	}

	// Well-behaved v2 writers: upstream's statements and gosync's push.
	v2All := gosync.Server{SchemaVersion: 2, Declared: everywhere}
	for i, w := range newPartitionWrites {
		partition := fmt.Sprintf("v2-%d", i)
		if err := pgx.BeginFunc(ctx, writer, func(tx pgx.Tx) error { return w.write(ctx, tx, partition, v(2)) }); err != nil {
			t.Fatalf("%s: a v2 writer cannot create partition %s: %v", w.name, partition, err)
		}
	}
	if _, err := gosync.New(writer).Push(ctx, "v2-push", todoCommit("c", 1), v2All); err != nil {
		t.Fatalf("a v2 server cannot push to a new partition: %v", err)
	}
	for _, partition := range []string{"v2-0", "v2-1", "v2-2", "v2-3", "v2-push"} {
		if f := fenceOf(t, d.Pool, partition); f != 2 {
			t.Fatalf("fence of new partition %s = %d, want 2", partition, f)
		}
		cp, err := s.Checkpoint(ctx, partition, todos.Projection)
		if err != nil || cp.State != gosync.StateActivated || cp.Watermark != 0 || cp.SchemaVersion != 2 {
			t.Fatalf("checkpoint of new partition %s = %+v, %v; want activated at 0, version 2", partition, cp, err)
		}
		if r, err := s.ServeCheck(ctx, partition, v2All); err != nil || r != nil {
			t.Fatalf("a v2 server's gate on new partition %s: %+v, %v", partition, r, err)
		}
		if _, err := oldWriterCommit(ctx, writer, partition, v(1)); !errors.Is(err, gosync.ErrWriterFenceRejected) {
			t.Fatalf("v1 writer in new partition %s: %v", partition, err)
		}
	}
	// The partition that existed at the bump still waits for its backfill.
	if r, err := s.ServeCheck(ctx, "existing", v2All); err != nil || r == nil || r.Kind != gosync.RefusalCheckpoint {
		t.Fatalf("gate on the partition declared at the bump: %+v, %v", r, err)
	}
}

// TestRedTeamNewPartitionStaleSnapshot: an old writer already running
// (its REPEATABLE READ or SERIALIZABLE snapshot predates the bump) waits on
// the bump's migration lock, then creates a partition. It must not read "no
// declarations": 40001 (or the fence), nothing stored. In READ COMMITTED it
// sees the declaration and meets the fence.
func TestRedTeamNewPartitionStaleSnapshot(t *testing.T) {
	ctx := context.Background()
	type path struct {
		name  string
		write func(tx pgx.Tx) error
	}
	paths := append([]path{}, path{"Store.WithTx(tx).Push, v1 server", func(tx pgx.Tx) error {
		_, err := gosync.New(nil).WithTx(tx).Push(ctx, "late", todoCommit("c", 1), serverV1)
		return err
	}})
	for _, w := range newPartitionWrites[:2] {
		paths = append(paths, path{w.name, func(tx pgx.Tx) error { return w.write(ctx, tx, "late", v(1)) }})
	}
	for _, iso := range []pgx.TxIsoLevel{pgx.RepeatableRead, pgx.Serializable, pgx.ReadCommitted} {
		for _, p := range paths {
			t.Run(fmt.Sprintf("%s/%s", iso, p.name), func(t *testing.T) {
				d, s := v1DB(t)
				writer := loginAs(t, d, "sync_writer", nil)
				mustPush(t, writer, "existing", "todos", 1)
				tx, err := writer.BeginTx(ctx, pgx.TxOptions{IsoLevel: iso})
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback(ctx)
				mustExec(t, tx, "SELECT count(*) FROM sync_writer_fence") // the snapshot, before the bump

				bumped := make(chan error, 1)
				locked, release := make(chan struct{}), make(chan struct{})
				go func() {
					bumped <- s.EnsureSchema(ctx, todosSchema(2), everywhere, &gosync.SchemaChangeOptions{
						DDL: func(ctx context.Context, btx pgx.Tx) error {
							close(locked)
							<-release
							return todosDDL(2).DDL(ctx, btx)
						}})
				}()
				<-locked
				wrote := make(chan error, 1)
				go func() {
					err := p.write(tx)
					if err == nil {
						err = tx.Commit(ctx)
					}
					wrote <- err
				}()
				waitForLockWaiters(t, d, 1)
				close(release)
				if err := within(t, "bump", bumped); err != nil {
					t.Fatal(err)
				}
				before := attackState(t, d)
				err = within(t, "stale writer", wrote)
				if !refusedAsStaleOrFenced(err) {
					t.Fatalf("a writer whose snapshot predates the bump created a partition below the every-partition fence: %v", err)
				}
				_ = tx.Rollback(ctx)
				if after := attackState(t, d); after != before {
					t.Fatalf("a refused write changed the database:\nbefore %s\nafter  %s", before, after)
				}
				if n := countCommits(t, d.Pool, "late"); n != 0 {
					t.Fatalf("%d commits stored in the late partition", n)
				}
			})
		}
	}
}

// TestNewPartitionExampleMigration: the example application's goose bump
// (sync_install_all_partitions) holds for partitions created after it.
func TestNewPartitionExampleMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	p := appMigrationsAtV1(t, d)
	mustPush(t, d.Pool, "p1", "todos", 1)
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	before := attackState(t, d)
	if _, err := oldWriterCommit(ctx, d.Pool, "created-later", v(1)); !errors.Is(err, gosync.ErrWriterFenceRejected) {
		t.Fatalf("a v1 writer created a partition after the example bump: %v", err)
	}
	if after := attackState(t, d); after != before {
		t.Fatalf("a refused write changed the database:\nbefore %s\nafter  %s", before, after)
	}
	if _, err := oldWriterCommit(ctx, d.Pool, "created-later", v(2)); err != nil {
		t.Fatal(err)
	}
	cp, err := gosync.New(d.Pool).Checkpoint(ctx, "created-later", todos.Projection)
	if err != nil || cp.State != gosync.StateActivated {
		t.Fatalf("checkpoint of the later partition: %+v, %v", cp, err)
	}
}

// TestInstallAllPartitionsNeedsReadCommitted: a bump in REPEATABLE READ
// took its snapshot before its lock wait and would miss partitions created
// meanwhile: refused, nothing changed. EnsureSchema's bump runs READ
// COMMITTED even on a pool whose default is REPEATABLE READ.
func TestInstallAllPartitionsNeedsReadCommitted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := v1DB(t)
	admin := loginAs(t, d, "sync_admin", nil)
	before := attackState(t, d)
	err := pgx.BeginTxFunc(ctx, admin, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `SELECT sync_begin_schema_change(), sync_install_all_partitions('{proj}', 2)`)
		return err
	})
	if sqlState(err) != "25000" {
		t.Fatalf("every-partition install in REPEATABLE READ: %v", err)
	}
	if after := attackState(t, d); after != before {
		t.Fatalf("a refused install changed the database:\nbefore %s\nafter  %s", before, after)
	}
	cfg, err := pgxpool.ParseConfig(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["default_transaction_isolation"] = "repeatable read"
	rr, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Close()
	if err := gosync.New(rr).EnsureSchema(ctx, todosSchema(2), everywhere, todosDDL(2)); err != nil {
		t.Fatalf("EnsureSchema on a REPEATABLE READ pool: %v", err)
	}
}
