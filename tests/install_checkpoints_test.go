package tests

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// TestBumpDeclaresForEveryPartition: a declaration for every partition
// installs the checkpoint, with its fence, in each partition that has a
// log; the start-up check accepts the same declaration, and refuses a server
// that declares only some of the pairs.
func TestBumpDeclaresForEveryPartition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := v1DB(t)
	for _, p := range []string{"t1", "t2", "t3"} {
		if _, err := s.Push(ctx, p, todoCommit("c-"+p, 1), serverV1); err != nil {
			t.Fatal(err)
		}
	}
	everywhere := []gosync.CheckpointDeclaration{{AllPartitions: true, Name: "todos_by_owner", SchemaVersion: 2}}
	if err := s.EnsureSchema(ctx, todosSchema(2), everywhere, todosDDL(2)); err != nil {
		t.Fatal(err)
	}
	cps, err := s.Checkpoints(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, cp := range cps {
		got = append(got, cp.Partition+"/"+cp.Name+"/"+string(cp.State))
		if f := fenceOf(t, d.Pool, cp.Partition); f != 2 {
			t.Errorf("fence of %s = %d, want 2", cp.Partition, f)
		}
	}
	if want := "t1/todos_by_owner/declared t2/todos_by_owner/declared t3/todos_by_owner/declared"; strings.Join(got, " ") != want {
		t.Fatalf("checkpoints = %v, want %s", got, want)
	}
	if err := s.EnsureSchema(ctx, todosSchema(2), everywhere, nil); err != nil {
		t.Fatalf("a second server with the same declaration: %v", err)
	}
	some := []gosync.CheckpointDeclaration{{Partition: "t1", Name: "todos_by_owner", SchemaVersion: 2}, {Partition: "t3", Name: "todos_by_owner", SchemaVersion: 2}}
	err = s.EnsureSchema(ctx, todosSchema(2), some, nil)
	if !errors.Is(err, gosync.ErrCheckpointIncomplete) || !strings.Contains(err.Error(), `partition "t2"`) {
		t.Fatalf("a server declaring t1 and t3 only: %v, want ErrCheckpointIncomplete naming t2", err)
	}
	srv := gosync.Server{SchemaVersion: 2, Declared: everywhere}
	if r, err := s.ServeCheck(ctx, "t9", srv); err != nil || r != nil {
		t.Fatalf("gate elsewhere with the projection declared everywhere = %+v, %v; want open", r, err)
	}
	if r, err := s.ServeCheck(ctx, "t2", srv); err != nil || r == nil || r.Checkpoint != (gosync.CheckpointRef{Partition: "t2", Name: "todos_by_owner"}) {
		t.Fatalf("gate of t2 while its projection backfills = %+v, %v", r, err)
	}
}

// TestInstallCheckpointsConflictsWithOlderSnapshots: a writer whose
// REPEATABLE READ snapshot predates a fence raised by
// sync_install_checkpoints cannot append under the old fence — the install
// wrote the partition row, so the writer's lock of it fails to serialize.
func TestInstallCheckpointsConflictsWithOlderSnapshots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	if _, err := oldWriterCommit(ctx, d.Pool, "p1", v(1)); err != nil {
		t.Fatal(err)
	}
	writer, err := d.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Rollback(ctx)
	if fences := queryOne[int](t, writer, "SELECT count(*) FROM sync_writer_fence"); fences != 0 {
		t.Fatalf("snapshot: %d fences", fences)
	}
	mustExec(t, d.Pool, "SELECT sync_install_checkpoints('{p1}', '{proj}', 2)")
	_, err = writer.Exec(ctx, `SELECT sync_append_commit('p1', 'c', 'late', 'a', 0, 1, '{}', '{}', '{}', '{}', '{}', '{}')`)
	if code := sqlState(err); code != "40001" {
		t.Fatalf("append at version 1 from a snapshot older than the fence: SQLSTATE %q (%v), want 40001", code, err)
	}
}
