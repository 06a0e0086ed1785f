package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// TestActivationRacingPushes: writers on their own connections keep
// appending source changes while an owner activates, 500 rounds. Activation
// reads max_commit_seq inside its own transaction, still holding the
// partition lock; the invariant the lock exists for is that no source change
// committed before the activation (seq ≤ that max) lies above the
// activated watermark.
func TestActivationRacingPushes(t *testing.T) {
	const (
		rounds  = 500
		writers = 4
	)
	ctx := context.Background()
	d := pgtest.New(t)
	s := gosync.New(d.Pool)
	sources := []string{"todos"}

	stop := make(chan struct{})
	var pushes atomic.Int64
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
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				tbl := "todos"
				if i%3 == 2 {
					tbl = "unrelated"
				}
				if _, err := pushChange(ctx, conn, "p1", tbl, 2); err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				pushes.Add(1)
				// A short random pause lets the owner win some races: with
				// no pause at all, a writer lands in every gap between the
				// coverage read and the activation and no round ends.
				time.Sleep(time.Duration(rand.IntN(4000)) * time.Microsecond)
			}
		}(w)
	}

	owner := d.Conn(t)
	var activated, staleResults int
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
			// The coverage read and the activation are separate statements,
			// so writers land in between: most first attempts are stale.
			watermark, err := s.SourceCoverageSeq(ctx, "p1", sources)
			if err != nil {
				t.Fatal(err)
			}
			// The owner advances to what it covered, then activates at
			// exactly that stored watermark.
			if ok, err := s.AdvanceCheckpoint(ctx, gosync.CheckpointAdvance{Partition: "p1", Name: name, OwnerEpoch: cp.OwnerEpoch, Watermark: watermark, ObservedRows: 0}); err != nil || !ok {
				t.Fatalf("round %d: advance to %d: %v, %v", round, watermark, ok, err)
			}
			var result string
			var maxAtActivation int64
			err = pgx.BeginFunc(ctx, owner, func(tx pgx.Tx) error {
				if err := tx.QueryRow(ctx, "SELECT sync_activate_checkpoint('p1', $1, $2, $3, $4)",
					name, cp.OwnerEpoch, watermark, sources).Scan(&result); err != nil {
					return err
				}
				return tx.QueryRow(ctx, "SELECT max_commit_seq FROM sync_partitions WHERE partition = 'p1'").Scan(&maxAtActivation)
			})
			if err != nil {
				t.Fatal(err)
			}
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
			var missed int64
			if err := d.Pool.QueryRow(ctx, `SELECT count(*) FROM sync_changes
				WHERE partition = 'p1' AND tbl = ANY($1) AND commit_seq > $2 AND commit_seq <= $3`,
				sources, watermark, maxAtActivation).Scan(&missed); err != nil {
				t.Fatal(err)
			}
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
	if pushes.Load() == 0 || staleResults == 0 {
		t.Fatalf("no contention: %d pushes, %d stale activations", pushes.Load(), staleResults)
	}
	t.Logf("%d activations, %d stale attempts, %d concurrent pushes", activated, staleResults, pushes.Load())
}
