package tests

import (
	"context"
	"sort"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// TestConcurrentClaims: 64 claimers on 64 separate connections claim one
// checkpoint at once. The UPDATE's row lock serializes them: every epoch is
// distinct, they are exactly 1..64, and only the newest owner can advance or
// activate; every older owner's CAS fails and changes nothing.
func TestConcurrentClaims(t *testing.T) {
	t.Parallel()
	const claimers = 64
	ctx := context.Background()
	d := pgtest.New(t)
	storeTables(t, d, 2, "todos")
	if _, err := gosync.New(d.Pool).DeclareCheckpoint(ctx, "p1", "proj", 2); err != nil {
		t.Fatal(err)
	}
	conns := make([]*pgx.Conn, claimers)
	for i := range conns {
		conns[i] = d.Conn(t)
	}

	epochs := make([]int64, claimers)
	errs := make([]error, claimers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			var epoch int64
			errs[i] = conns[i].QueryRow(ctx, "SELECT owner_epoch FROM sync_claim_checkpoint('p1', 'proj', 2)").Scan(&epoch)
			epochs[i] = epoch
		}(i)
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("claimer %d: %v", i, err)
		}
	}
	sorted := append([]int64(nil), epochs...)
	sort.Slice(sorted, func(a, b int) bool { return sorted[a] < sorted[b] })
	for i, e := range sorted {
		if e != int64(i+1) {
			t.Fatalf("epochs are not exactly 1..%d: %v", claimers, sorted)
		}
	}
	s := gosync.New(d.Pool)
	cp, err := s.Checkpoint(ctx, "p1", "proj")
	if err != nil || cp.OwnerEpoch != claimers {
		t.Fatalf("final epoch = %d, %v; want %d", cp.OwnerEpoch, err, claimers)
	}

	// Every older owner, each on its own connection: advance and activate fail.
	// (Activation creates a missing partition row by design: create it first.)
	mustExec(t, d.Pool, "SELECT FROM sync_lock_partition('p1')")
	before := barrierState(t, d)
	var stale sync.WaitGroup
	for i := range conns {
		if epochs[i] == claimers {
			continue
		}
		stale.Add(1)
		go func(i int) {
			defer stale.Done()
			var ok bool
			if err := conns[i].QueryRow(ctx, "SELECT sync_advance_checkpoint('p1', 'proj', $1, 99, 99)", epochs[i]).Scan(&ok); err != nil || ok {
				t.Errorf("stale owner %d advanced: %v, %v", epochs[i], ok, err)
			}
			var r string
			if err := conns[i].QueryRow(ctx, "SELECT sync_activate_checkpoint('p1', 'proj', $1, 0, '{todos}')", epochs[i]).Scan(&r); err != nil || r != "stale" {
				t.Errorf("stale owner %d activation = %q, %v; want stale", epochs[i], r, err)
			}
		}(i)
	}
	stale.Wait()
	if after := barrierState(t, d); after != before {
		t.Fatalf("stale owners changed state:\nbefore %s\nafter  %s", before, after)
	}

	if ok, err := s.AdvanceCheckpoint(ctx, gosync.CheckpointAdvance{Partition: "p1", Name: "proj", OwnerEpoch: claimers, Watermark: 0, ObservedRows: 5}); err != nil || !ok {
		t.Fatalf("newest owner advance = %v, %v", ok, err)
	}
	if r, err := s.ActivateCheckpoint(ctx, gosync.CheckpointActivation{Partition: "p1", Name: "proj", OwnerEpoch: claimers, Watermark: 0, Sources: []string{"todos"}}); err != nil || r != gosync.ActivationActivated {
		t.Fatalf("newest owner activation = %q, %v", r, err)
	}
}
