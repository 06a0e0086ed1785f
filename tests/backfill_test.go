package tests

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gosync/gosync/examples/todos"
	"github.com/gosync/gosync/gosync"
)

func todosBackfill(knobs *gosync.BackfillKnobs) gosync.Backfill {
	return gosync.Backfill{Partition: "p1", Name: todos.Projection, SchemaVersion: 2,
		Sources: []string{todos.Source}, Apply: todos.Apply, Knobs: knobs}
}

// TestBackfillFillsAndActivates: a backfill in batches of 300 fills the
// projection, equal to a rebuild, and activates it; the gate then opens.
// Both apply steps: per change (Apply) and set-based (ApplyRange).
func TestBackfillFillsAndActivates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		changes  int64
		setBased bool
		reports  int // one a batch
	}{
		{"per change", 2000, false, 7},
		{"set-based", 2500, true, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d, s := backfillDB(t, int(tc.changes))
			var reports []gosync.Progress
			b := todosBackfill(gosync.NewBackfillKnobs(gosync.BackfillSettings{BatchSize: 300}))
			if tc.setBased {
				b.Apply, b.ApplyRange = nil, todos.ApplyRange
			}
			b.Progress = func(p gosync.Progress) { reports = append(reports, p) }
			cp, err := s.RunBackfill(ctx, b)
			if err != nil {
				t.Fatal(err)
			}
			if cp.State != gosync.StateActivated || cp.Watermark != tc.changes || cp.ObservedRows != tc.changes || cp.OwnerEpoch != 1 {
				t.Fatalf("checkpoint = %+v", cp)
			}
			if diff := projectionDiff(t, d, -1); diff != "" {
				t.Fatalf("projection differs from a rebuild: %s", diff)
			}
			last := len(reports) - 1
			if len(reports) != tc.reports || reports[last].RowsDone != tc.changes || reports[last].Watermark != tc.changes || reports[0].CoverageSeq != tc.changes {
				t.Fatalf("progress reports: %d, last %+v", len(reports), reports[last])
			}
			// The gate opens for the v2 server.
			if _, err := s.Push(ctx, "p1", todoCommit("after", 1), serverV2); err != nil {
				t.Fatalf("push after activation: %v", err)
			}
		})
	}
}

// TestBackfillCrashResume: the worker's connection is terminated by the
// server in the middle of a batch (after it wrote part of the projection).
// The batch rolls back whole: projection and watermark stay consistent. A
// new worker claims, resumes from the stored watermark and ends with the
// projection exactly equal to a rebuild.
func TestBackfillCrashResume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := backfillDB(t, 3000)
	var batches atomic.Int32
	b := todosBackfill(gosync.NewBackfillKnobs(gosync.BackfillSettings{BatchSize: 400}))
	b.Apply = func(ctx context.Context, tx pgx.Tx, batch []gosync.SourceChange) error {
		if err := todos.Apply(ctx, tx, batch); err != nil {
			return err
		}
		if batches.Add(1) == 3 {
			// Kill this worker's backend mid-batch, from another session.
			if _, err := d.Pool.Exec(ctx, "SELECT pg_terminate_backend($1)", tx.Conn().PgConn().PID()); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "SELECT 1") // the dead connection fails here
			return err
		}
		return nil
	}
	if _, err := s.RunBackfill(ctx, b); err == nil {
		t.Fatal("backfill survived the termination of its connection")
	}
	cp, err := s.Checkpoint(ctx, "p1", todos.Projection)
	if err != nil {
		t.Fatal(err)
	}
	if cp.State != gosync.StateBackfilling || cp.Watermark == 0 || cp.Watermark >= 3000 || cp.OwnerEpoch != 1 {
		t.Fatalf("after the crash: %+v", cp)
	}
	if diff := projectionDiff(t, d, cp.Watermark); diff != "" {
		t.Fatalf("projection and watermark %d disagree after the crash: %s", cp.Watermark, diff)
	}

	resumed, err := s.RunBackfill(ctx, todosBackfill(nil))
	if err != nil {
		t.Fatal(err)
	}
	if resumed.State != gosync.StateActivated || resumed.OwnerEpoch != 2 || resumed.ObservedRows != 3000 {
		t.Fatalf("resumed = %+v", resumed)
	}
	if diff := projectionDiff(t, d, -1); diff != "" {
		t.Fatalf("projection differs from a rebuild after resuming: %s", diff)
	}
}

// TestBackfillRacingWorkers: two workers on the same checkpoint; the second
// claim fences out the first, which stops with ErrLostOwnership having
// written nothing more; exactly one activates and the projection is exact.
func TestBackfillRacingWorkers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := backfillDB(t, 3000)
	knobs := gosync.NewBackfillKnobs(gosync.BackfillSettings{BatchSize: 100, Pause: 5 * time.Millisecond})
	results := make([]error, 2)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// The second claims once the first has committed a batch or two
			// (a fixed delay lost the race on a loaded machine: the first
			// had activated before the second claimed).
			for i == 1 {
				cp, err := s.Checkpoint(ctx, "p1", todos.Projection)
				if err != nil || cp.Watermark >= 100 {
					break
				}
				time.Sleep(time.Millisecond)
			}
			_, results[i] = s.RunBackfill(ctx, todosBackfill(knobs))
		}(i)
	}
	wg.Wait()
	activated, lost := 0, 0
	for _, err := range results {
		switch {
		case err == nil:
			activated++
		case errors.Is(err, gosync.ErrLostOwnership):
			lost++
		default:
			t.Fatalf("worker: %v", err)
		}
	}
	if activated != 1 || lost != 1 {
		t.Fatalf("%d activated, %d lost ownership; want 1 and 1", activated, lost)
	}
	if diff := projectionDiff(t, d, -1); diff != "" {
		t.Fatalf("projection differs from a rebuild: %s", diff)
	}
}

// TestBackfillKnobs: batch size is observed in the data (rows per batch) and
// can change while the worker runs; the pause adds up over many batches.
func TestBackfillKnobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, s := backfillDB(t, 1000)
	knobs := gosync.NewBackfillKnobs(gosync.BackfillSettings{BatchSize: 100, Pause: 10 * time.Millisecond})
	b := todosBackfill(knobs)
	var sizes []int64
	var last int64
	b.Progress = func(p gosync.Progress) {
		sizes = append(sizes, p.RowsDone-last)
		last = p.RowsDone
		if len(sizes) == 3 {
			knobs.Store(gosync.BackfillSettings{BatchSize: 50, Pause: 10 * time.Millisecond})
		}
	}
	start := time.Now()
	if _, err := s.RunBackfill(ctx, b); err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	for i, n := range sizes {
		want := int64(100)
		if i >= 3 {
			want = 50
		}
		if n != want {
			t.Fatalf("batch %d applied %d changes, want %d (sizes %v)", i, n, want, sizes)
		}
	}
	if len(sizes) != 3+14 {
		t.Fatalf("%d batches, want 17 (3 of 100, 14 of 50)", len(sizes))
	}
	if min := time.Duration(len(sizes)) * 10 * time.Millisecond; elapsed < min {
		t.Fatalf("%d batches with a 10ms pause took %s, less than %s", len(sizes), elapsed, min)
	}
}

// TestBackfillRateLimit: a rate limit of 2000 changes/s over 500 changes
// cannot finish in less than a quarter of a second.
func TestBackfillRateLimit(t *testing.T) {
	t.Parallel()
	_, s := backfillDB(t, 500)
	start := time.Now()
	if _, err := s.RunBackfill(context.Background(), todosBackfill(gosync.NewBackfillKnobs(gosync.BackfillSettings{BatchSize: 50, RowsPerS: 2000}))); err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed < 250*time.Millisecond {
		t.Fatalf("500 changes at 2000/s took %s", elapsed)
	}
}

// TestBackfillPrunedLog: a log pruned past the watermark cannot be replayed;
// the worker stops with ErrLogPruned and writes nothing. With an initial fill
// from the application's current rows, the fill starts at the snapshot's
// cursor instead and activates.
func TestBackfillPrunedLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := backfillDB(t, 100)
	// The application's current rows, as of the whole log.
	mustExec(t, d.Pool, `INSERT INTO todos (id, title, owner_id)
		SELECT todo_id, title, owner_id FROM (`+todos.RebuildQuery+`) r`, "p1")
	if _, err := s.PruneLog(ctx, "p1", 50); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RunBackfill(ctx, todosBackfill(nil)); !errors.Is(err, gosync.ErrLogPruned) {
		t.Fatalf("backfill over a pruned log: %v, want ErrLogPruned", err)
	}
	if rows := queryOne[int](t, d.Pool, "SELECT count(*) FROM todos_by_owner"); rows != 0 {
		t.Fatalf("refused backfill wrote %d projection rows", rows)
	}

	b := todosBackfill(nil)
	b.Initial = func(ctx context.Context, tx pgx.Tx) (int64, error) {
		tag, err := tx.Exec(ctx, "INSERT INTO todos_by_owner SELECT 'p1', id, owner_id, title FROM todos")
		return tag.RowsAffected(), err
	}
	cp, err := s.RunBackfill(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if cp.State != gosync.StateActivated || cp.Watermark != 100 {
		t.Fatalf("after the initial fill: %+v", cp)
	}
	var missing int
	if err := d.Pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT id, owner_id, title FROM todos
		EXCEPT SELECT todo_id, owner_id, title FROM todos_by_owner) x`).Scan(&missing); err != nil || missing != 0 {
		t.Fatalf("%d current rows missing from the projection, %v", missing, err)
	}
}

func TestWaitActivatedWakesOnNotification(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := backfillDB(t, 10)
	woke := make(chan error, 1)
	go func() {
		// A poll interval far beyond the test's bound: only the notification can wake it in time.
		woke <- gosync.WaitActivated(ctx, d.Pool, "p1", todos.Projection, time.Hour)
	}()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-woke:
		t.Fatalf("woke before activation: %v", err)
	default:
	}
	other := gosync.New(d.Pool)
	if _, err := other.RunBackfill(ctx, todosBackfill(nil)); err != nil {
		t.Fatal(err)
	}
	if err := within(t, "WaitActivated after the activation", woke); err != nil {
		t.Fatal(err)
	}
	_ = s
}
