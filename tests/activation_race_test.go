package tests

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// TestActivationRacingPushes: writers on their own connections append
// source changes while an owner activates, 500 rounds. Activation reads
// max_commit_seq inside its own transaction, still holding the partition
// lock; the invariant the lock exists for is that no source change
// committed before the activation (seq ≤ that max) lies above the
// activated watermark.
//
// Every activation attempt releases each writer for one push and starts
// only once one of them has begun, so every attempt, and every activation,
// races pushes; between attempts the writers wait instead of piling up
// pushes (and CPU) that race nothing.
func TestActivationRacingPushes(t *testing.T) {
	t.Parallel()
	const (
		rounds  = 500
		writers = 4
	)
	ctx := context.Background()
	d := pgtest.New(t)
	s := gosync.New(d.Pool)
	sources := []string{"todos"}
	storeTables(t, d, 1, sources...)

	// Each release (generation) lets every writer push once: one still
	// pushing when it comes pushes again at once; one waiting wakes up as
	// next closes.
	var mu sync.Mutex
	var generation int
	next := make(chan struct{})
	release := func() {
		mu.Lock()
		defer mu.Unlock()
		generation++
		close(next)
		next = make(chan struct{})
	}
	gate := func() (int, <-chan struct{}) { mu.Lock(); defer mu.Unlock(); return generation, next }

	stop := make(chan struct{})
	began := make(chan struct{}, writers) // a writer began a push
	// Pushes begun and committed, and source pushes in flight.
	var started, finished, sourceInFlight atomic.Int64
	var wg sync.WaitGroup
	// Writers must be stopped before the test's connections close, also on
	// a failure: deferred calls run before t.Cleanup.
	stopWriters := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopWriters()
	for w := 0; w < writers; w++ {
		conn := d.Conn(t)
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			served := 0
			for i := 0; ; i++ {
				g, released := gate()
				if g == served {
					select {
					case <-stop:
						return
					case <-released:
					}
					g, _ = gate()
				}
				served = g
				tbl, source := "todos", int64(1)
				if i%3 == 2 {
					tbl, source = "unrelated", 0
				}
				sourceInFlight.Add(source)
				started.Add(1)
				select {
				case began <- struct{}{}:
				default:
				}
				_, err := pushChange(ctx, conn, "p1", tbl, 2)
				sourceInFlight.Add(-source)
				if err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				finished.Add(1)
			}
		}(w)
	}

	owner := d.Conn(t)
	var activated, raced, staleResults, overlapped int
	for round := 0; round < rounds && !t.Failed(); round++ {
		name := fmt.Sprintf("proj_%d", round)
		if _, err := s.DeclareCheckpoint(ctx, "p1", name, 2); err != nil {
			t.Fatal(err)
		}
		cp, err := s.ClaimCheckpoint(ctx, "p1", name, 2)
		if err != nil {
			t.Fatal(err)
		}
		for attempt := 0; ; attempt++ {
			finishedBefore, startedBefore := finished.Load(), started.Load()
			release()
			for started.Load() == startedBefore {
				select {
				case <-began:
				case <-time.After(15 * time.Second):
					t.Fatalf("round %d: no writer began a push in 15s", round)
				}
			}
			// The coverage read and the activation are separate statements,
			// so writers land in between: many first attempts are stale.
			watermark, err := s.SourceCoverageSeq(ctx, "p1", sources)
			if err != nil {
				t.Fatal(err)
			}
			// The owner advances to what it covered, then activates at
			// exactly that stored watermark.
			if ok, err := s.AdvanceCheckpoint(ctx, gosync.CheckpointAdvance{Partition: "p1", Name: name, OwnerEpoch: cp.OwnerEpoch, Watermark: watermark, ObservedRows: 0}); err != nil || !ok {
				t.Fatalf("round %d: advance to %d: %v, %v", round, watermark, ok, err)
			}
			if sourceInFlight.Load() > 0 {
				overlapped++
			}
			var result string
			var maxAtActivation int64
			err = pgx.BeginFunc(ctx, owner, func(tx pgx.Tx) error {
				if err := tx.QueryRow(ctx, "SELECT sync_activate_checkpoint('p1', $1, $2, $3, $4)",
					name, cp.OwnerEpoch, watermark, sources).Scan(&result); err != nil {
					return err
				}
				maxAtActivation = maxCommitSeq(t, tx, "p1")
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			// A push raced this attempt if one was in flight when it began
			// or began before the activation committed.
			racing := started.Load() > finishedBefore
			if result == "stale" {
				staleResults++
				if attempt > 10000 {
					t.Fatalf("round %d: never activated", round)
				}
				continue
			}
			if result != "activated" {
				t.Fatalf("round %d: activation = %q", round, result)
			}
			activated++
			if racing {
				raced++
			}
			missed := queryOne[int64](t, d.Pool, `SELECT count(*) FROM sync_changes
				WHERE partition = 'p1' AND tbl = ANY($1) AND commit_seq > $2 AND commit_seq <= $3`,
				sources, watermark, maxAtActivation)
			if missed != 0 {
				t.Fatalf("round %d: activated at watermark %d over %d source changes committed before the activation (max seq %d)",
					round, watermark, missed, maxAtActivation)
			}
			break
		}
	}
	stopWriters()
	if activated != rounds {
		t.Fatalf("activated %d of %d rounds", activated, rounds)
	}
	if raced != activated || staleResults == 0 || overlapped == 0 {
		t.Fatalf("no contention: %d of %d activations raced a push, %d stale attempts, %d attempts sent with a source push in flight",
			raced, activated, staleResults, overlapped)
	}
	t.Logf("%d activations, each racing a push; %d stale attempts; %d attempts sent with a source push in flight; %d concurrent pushes",
		activated, staleResults, overlapped, finished.Load())
}
