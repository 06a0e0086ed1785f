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

func TestCheckpointLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	s := gosync.New(d.Pool)
	storeTables(t, d, 2, "todos", "lists")

	cp, err := s.DeclareCheckpoint(ctx, "p1", "todos_by_owner", 2)
	if err != nil {
		t.Fatal(err)
	}
	if cp.State != gosync.StateDeclared || cp.OwnerEpoch != 0 || cp.Watermark != 0 || cp.SchemaVersion != 2 {
		t.Fatalf("declared = %+v", cp)
	}
	if got := fenceOf(t, d.Pool, "p1"); got != 2 {
		t.Fatalf("fence after declare v2 = %d", got)
	}
	// A lower version never lowers the fence.
	if _, err := s.DeclareCheckpoint(ctx, "p1", "other", 1); err != nil {
		t.Fatal(err)
	}
	if got := fenceOf(t, d.Pool, "p1"); got != 2 {
		t.Fatalf("fence after declaring v1 over v2 = %d, want 2", got)
	}
	// An existing row is never re-declared, but the fence still rises.
	again, err := s.DeclareCheckpoint(ctx, "p1", "todos_by_owner", 3)
	if err != nil {
		t.Fatal(err)
	}
	if again != cp {
		t.Fatalf("re-declare changed the row: %+v, was %+v", again, cp)
	}
	if got := fenceOf(t, d.Pool, "p1"); got != 3 {
		t.Fatalf("fence after declaring v3 = %d, want 3", got)
	}

	// A claim never re-stamps the version: at another version it is refused
	// and the row is unchanged.
	if _, err := s.ClaimCheckpoint(ctx, "p1", "todos_by_owner", 3); !errors.Is(err, gosync.ErrCheckpointNotDeclared) {
		t.Fatalf("claim at v3 of a v2 checkpoint: %v, want ErrCheckpointNotDeclared", err)
	}
	if got, err := s.Checkpoint(ctx, "p1", "todos_by_owner"); err != nil || got != cp {
		t.Fatalf("after the refused claim: %+v, %v; want %+v", got, err, cp)
	}
	claimed, err := s.ClaimCheckpoint(ctx, "p1", "todos_by_owner", 2)
	if err != nil {
		t.Fatal(err)
	}
	if claimed.OwnerEpoch != 1 || claimed.State != gosync.StateBackfilling || claimed.SchemaVersion != 2 {
		t.Fatalf("claimed = %+v, want epoch 1, backfilling, v2", claimed)
	}

	seq := mustPush(t, d.Pool, "p1", "todos", 3)
	mustPush(t, d.Pool, "p1", "unrelated", 3)
	if cov, err := s.SourceCoverageSeq(ctx, "p1", []string{"todos"}); err != nil || cov != seq {
		t.Fatalf("coverage seq = %d, %v; want %d", cov, err, seq)
	}
	if cov, err := s.SourceCoverageSeq(ctx, "p1", []string{"nothing"}); err != nil || cov != 0 {
		t.Fatalf("coverage seq of an untouched table = %d, %v; want 0", cov, err)
	}
	if c, err := s.SourceChangesAbove(ctx, "p1", []string{"todos"}, 0); err != nil || c != gosync.CoverageChanged {
		t.Fatalf("changes above 0 = %q, %v; want changed", c, err)
	}

	// Activation below the coverage seq is stale and changes nothing.
	if r, err := s.ActivateCheckpoint(ctx, gosync.CheckpointActivation{Partition: "p1", Name: "todos_by_owner", OwnerEpoch: 1, Watermark: 0, Sources: []string{"todos"}}); err != nil || r != gosync.ActivationStale {
		t.Fatalf("activate at watermark 0 = %q, %v; want stale", r, err)
	}
	if ok, err := s.AdvanceCheckpoint(ctx, gosync.CheckpointAdvance{Partition: "p1", Name: "todos_by_owner", OwnerEpoch: 1, Watermark: seq, ObservedRows: 1}); err != nil || !ok {
		t.Fatalf("advance = %v, %v", ok, err)
	}
	if r, err := s.ActivateCheckpoint(ctx, gosync.CheckpointActivation{Partition: "p1", Name: "todos_by_owner", OwnerEpoch: 1, Watermark: seq, Sources: []string{"todos"}}); err != nil || r != gosync.ActivationActivated {
		t.Fatalf("activate at the coverage seq = %q, %v; want activated", r, err)
	}
	got, err := s.Checkpoint(ctx, "p1", "todos_by_owner")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != gosync.StateActivated || got.Watermark != seq || got.ObservedRows != 1 || got.OwnerEpoch != 1 {
		t.Fatalf("after activation = %+v", got)
	}
	// Activated is final: a second activation loses the CAS, a claim is refused.
	if r, err := s.ActivateCheckpoint(ctx, gosync.CheckpointActivation{Partition: "p1", Name: "todos_by_owner", OwnerEpoch: 1, Watermark: seq, Sources: []string{"todos"}}); err != nil || r != gosync.ActivationStale {
		t.Fatalf("re-activate = %q, %v; want stale", r, err)
	}
	if _, err := s.ClaimCheckpoint(ctx, "p1", "todos_by_owner", 2); !errors.Is(err, gosync.ErrCheckpointNotDeclared) {
		t.Fatalf("claim of an activated checkpoint: %v, want ErrCheckpointNotDeclared", err)
	}

	// An empty source list is clean: nothing can be above the watermark.
	if c, err := s.SourceChangesAbove(ctx, "p1", nil, 0); err != nil || c != gosync.CoverageClean {
		t.Fatalf("empty source list = %q, %v; want clean", c, err)
	}
	other, err := s.ClaimCheckpoint(ctx, "p1", "other", 1)
	if err != nil {
		t.Fatal(err)
	}
	// ... but an activation over no source table would certify anything.
	before := barrierState(t, d)
	if _, err := s.ActivateCheckpoint(ctx, gosync.CheckpointActivation{Partition: "p1", Name: "other", OwnerEpoch: other.OwnerEpoch, Watermark: 0, Sources: nil}); !errors.Is(err, gosync.ErrUnknownSources) || !errors.Is(err, gosync.ErrInvalidArgument) {
		t.Fatalf("activate with no sources: %v; want ErrUnknownSources", err)
	}
	if after := barrierState(t, d); after != before {
		t.Fatalf("a refused activation changed the barrier:\nbefore %s\nafter  %s", before, after)
	}
	if r, err := s.ActivateCheckpoint(ctx, gosync.CheckpointActivation{Partition: "p1", Name: "other", OwnerEpoch: other.OwnerEpoch, Watermark: 0, Sources: []string{"lists"}}); err != nil || r != gosync.ActivationActivated {
		t.Fatalf("activate over a table without changes = %q, %v; want activated", r, err)
	}
	all, err := s.Checkpoints(ctx, "p1")
	if err != nil || len(all) != 2 || all[0].Name != "other" || all[1].Name != "todos_by_owner" {
		t.Fatalf("checkpoints = %+v, %v", all, err)
	}
}

func TestActivateRequiresFence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	s := gosync.New(d.Pool)
	storeTables(t, d, 2, "todos", "lists")

	// A checkpoint row written without its fence (by hand, or by a broken
	// installer) cannot be activated.
	mustExec(t, d.Pool, `INSERT INTO sync_backfill_checkpoints VALUES ('p1', 'bare', 2, 'backfilling', 0, 1, 0, 0)`)
	_, err := s.ActivateCheckpoint(ctx, gosync.CheckpointActivation{Partition: "p1", Name: "bare", OwnerEpoch: 1, Watermark: 0, Sources: []string{"todos"}})
	if !errors.Is(err, gosync.ErrCheckpointFenceMissing) {
		t.Fatalf("activate without a fence row: %v, want ErrCheckpointFenceMissing", err)
	}

	// A fence below the checkpoint's version (a row written by hand at 3
	// next to a fence of 2).
	if _, err := s.DeclareCheckpoint(ctx, "p2", "other", 2); err != nil {
		t.Fatal(err)
	}
	mustExec(t, d.Pool, `INSERT INTO sync_backfill_checkpoints VALUES ('p2', 'low', 3, 'declared', 0, 0, 0, 0)`)
	cp, err := s.ClaimCheckpoint(ctx, "p2", "low", 3)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.ActivateCheckpoint(ctx, gosync.CheckpointActivation{Partition: "p2", Name: "low", OwnerEpoch: cp.OwnerEpoch, Watermark: 0, Sources: []string{"todos"}})
	if !errors.Is(err, gosync.ErrCheckpointFenceMissing) {
		t.Fatalf("activate with fence 2 < version 3: %v, want ErrCheckpointFenceMissing", err)
	}
	if !strings.Contains(err.Error(), "needs a writer fence >= 3, found 2") {
		t.Fatalf("error does not explain the fence: %v", err)
	}
	if got, _ := s.Checkpoint(ctx, "p2", "low"); got.State != gosync.StateBackfilling {
		t.Fatalf("refused activation changed the state to %q", got.State)
	}

	// Unknown checkpoints.
	if _, err := s.ActivateCheckpoint(ctx, gosync.CheckpointActivation{Partition: "p2", Name: "nope", OwnerEpoch: 1, Watermark: 0, Sources: []string{"todos"}}); !errors.Is(err, gosync.ErrCheckpointNotDeclared) {
		t.Fatalf("activate unknown: %v", err)
	}
	if _, err := s.ClaimCheckpoint(ctx, "p2", "nope", 1); !errors.Is(err, gosync.ErrCheckpointNotDeclared) {
		t.Fatalf("claim unknown: %v", err)
	}
	if _, err := s.Checkpoint(ctx, "p2", "nope"); !errors.Is(err, gosync.ErrCheckpointNotDeclared) {
		t.Fatalf("read unknown: %v", err)
	}
}

func TestActivateUnverifiableWhenPruned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	s := gosync.New(d.Pool)
	storeTables(t, d, 2, "todos", "lists")
	if _, err := s.DeclareCheckpoint(ctx, "p1", "proj", 2); err != nil {
		t.Fatal(err)
	}
	cp, err := s.ClaimCheckpoint(ctx, "p1", "proj", 2)
	if err != nil {
		t.Fatal(err)
	}
	seq := mustPush(t, d.Pool, "p1", "todos", 2)
	if ok, err := s.AdvanceCheckpoint(ctx, gosync.CheckpointAdvance{Partition: "p1", Name: "proj", OwnerEpoch: cp.OwnerEpoch, Watermark: seq, ObservedRows: 1}); err != nil || !ok {
		t.Fatalf("advance: %v, %v", ok, err)
	}
	for i := 0; i < 5; i++ {
		mustPush(t, d.Pool, "p1", "todos", 2)
	}
	// The log is pruned through seq+5: the history that would prove the
	// window (seq, seq+5] is clean is gone.
	if _, err := s.PruneLog(ctx, "p1", seq+5); err != nil {
		t.Fatal(err)
	}
	if c, err := s.SourceChangesAbove(ctx, "p1", []string{"todos"}, seq); err != nil || c != gosync.CoverageUnverifiable {
		t.Fatalf("coverage = %q, %v; want unverifiable", c, err)
	}
	if r, err := s.ActivateCheckpoint(ctx, gosync.CheckpointActivation{Partition: "p1", Name: "proj", OwnerEpoch: cp.OwnerEpoch, Watermark: seq, Sources: []string{"todos"}}); err != nil || r != gosync.ActivationUnverifiable {
		t.Fatalf("activate = %q, %v; want unverifiable", r, err)
	}
	if got, _ := s.Checkpoint(ctx, "p1", "proj"); got.State != gosync.StateBackfilling {
		t.Fatalf("unverifiable activation changed the state to %q", got.State)
	}
	// No batch read the pruned (seq, seq+5]: advancing over it is refused ...
	if ok, err := s.AdvanceCheckpoint(ctx, gosync.CheckpointAdvance{Partition: "p1", Name: "proj", OwnerEpoch: cp.OwnerEpoch, Watermark: seq + 5, ObservedRows: 1}); !errors.Is(err, gosync.ErrLogPruned) || ok {
		t.Fatalf("advance over pruned history: %v, %v; want ErrLogPruned", ok, err)
	}
	// ... but a fill from current rows in one REPEATABLE READ snapshot, up
	// to that snapshot's head, makes a watermark at the horizon provable.
	if err := pgx.BeginTxFunc(ctx, d.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		ok, err := s.WithTx(tx).AdvanceCheckpoint(ctx, gosync.CheckpointAdvance{Partition: "p1", Name: "proj", OwnerEpoch: cp.OwnerEpoch, Watermark: seq + 5, ObservedRows: 1})
		if err == nil && !ok {
			err = errors.New("not advanced")
		}
		return err
	}); err != nil {
		t.Fatalf("advance to the head from current rows: %v", err)
	}
	if r, err := s.ActivateCheckpoint(ctx, gosync.CheckpointActivation{Partition: "p1", Name: "proj", OwnerEpoch: cp.OwnerEpoch, Watermark: seq + 5, Sources: []string{"todos"}}); err != nil || r != gosync.ActivationActivated {
		t.Fatalf("activate at the horizon = %q, %v; want activated", r, err)
	}
}

// TestBadArgumentsChangeNothing: every argument check refuses with
// ErrInvalidArgument and a message naming the argument, and leaves the
// barrier tables exactly as they were.
func TestBadArgumentsChangeNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	s := gosync.New(d.Pool)
	storeTables(t, d, 2, "todos", "lists")
	if _, err := s.DeclareCheckpoint(ctx, "p", "n", 2); err != nil {
		t.Fatal(err)
	}
	before := barrierState(t, d)
	long := strings.Repeat("x", 513)
	cases := []struct {
		name, mention string
		call          func() error
	}{
		{"declare empty partition", "partition", func() error { _, err := s.DeclareCheckpoint(ctx, "", "n", 2); return err }},
		{"declare empty name", "name", func() error { _, err := s.DeclareCheckpoint(ctx, "p", "", 2); return err }},
		{"declare version 0", "schema_version", func() error { _, err := s.DeclareCheckpoint(ctx, "p", "n2", 0); return err }},
		{"declare version over int32", "schema_version", func() error { _, err := s.DeclareCheckpoint(ctx, "p", "n2", 1<<40); return err }},
		{"declare long name", "name", func() error { _, err := s.DeclareCheckpoint(ctx, "p", long, 2); return err }},
		{"declare long partition", "partition", func() error { _, err := s.DeclareCheckpoint(ctx, long, "n", 2); return err }},
		{"claim version -1", "schema_version", func() error { _, err := s.ClaimCheckpoint(ctx, "p", "n", -1); return err }},
		{"advance negative epoch", "owner_epoch", func() error {
			_, err := s.AdvanceCheckpoint(ctx, gosync.CheckpointAdvance{Partition: "p", Name: "n", OwnerEpoch: -1, Watermark: 0, ObservedRows: 0})
			return err
		}},
		{"advance negative watermark", "watermark", func() error {
			_, err := s.AdvanceCheckpoint(ctx, gosync.CheckpointAdvance{Partition: "p", Name: "n", OwnerEpoch: 0, Watermark: -1, ObservedRows: 0})
			return err
		}},
		{"advance negative rows", "observed_rows", func() error {
			_, err := s.AdvanceCheckpoint(ctx, gosync.CheckpointAdvance{Partition: "p", Name: "n", OwnerEpoch: 0, Watermark: 0, ObservedRows: -1})
			return err
		}},
		{"activate negative watermark", "watermark", func() error {
			_, err := s.ActivateCheckpoint(ctx, gosync.CheckpointActivation{Partition: "p", Name: "n", OwnerEpoch: 0, Watermark: -1, Sources: nil})
			return err
		}},
		{"activate empty source", "source table", func() error {
			_, err := s.ActivateCheckpoint(ctx, gosync.CheckpointActivation{Partition: "p", Name: "n", OwnerEpoch: 0, Watermark: 0, Sources: []string{"t", ""}})
			return err
		}},
		{"coverage negative seq", "seq", func() error { _, err := s.SourceChangesAbove(ctx, "p", []string{"t"}, -1); return err }},
		{"coverage seq empty partition", "partition", func() error { _, err := s.SourceCoverageSeq(ctx, "", nil); return err }},
		{"gate empty partition", "partition", func() error { _, err := s.ServeGate(ctx, "", gosync.Server{SchemaVersion: 1}); return err }},
		{"NULL sources from SQL", "sources", func() error {
			_, err := d.Pool.Exec(ctx, "SELECT sync_activate_checkpoint('p', 'n', 0, 0, NULL)")
			return gosync.MapError(err)
		}},
		{"NULL partition from SQL", "partition", func() error {
			_, err := d.Pool.Exec(ctx, "SELECT sync_declare_checkpoint(NULL, 'n', 2)")
			return gosync.MapError(err)
		}},
	}
	for _, tc := range cases {
		err := tc.call()
		if !errors.Is(err, gosync.ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want ErrInvalidArgument", tc.name, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%s: message %q does not name %q", tc.name, err, tc.mention)
		}
	}
	if after := barrierState(t, d); after != before {
		t.Fatalf("bad arguments changed the barrier tables:\nbefore %s\nafter  %s", before, after)
	}
}
