package gosync_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// TestWaitActivatedCoalescesNotices: any role may NOTIFY the activation
// channel. A flood of forged matching notices (2,000 in about a second) costs
// the waiter about one read per coalescing gap, not one per notice, and the
// real activation still wakes it.
func TestWaitActivatedCoalescesNotices(t *testing.T) {
	ctx := context.Background()
	d := pgtest.New(t)
	// The stored schema's tables: activation's sources must be among them.
	if _, err := d.Pool.Exec(ctx, `INSERT INTO sync_schema_meta VALUES (1, 2, '{"todos": []}')`); err != nil {
		t.Fatal(err)
	}
	s := gosync.New(d.Pool)
	if _, err := s.DeclareCheckpoint(ctx, "p1", "proj", 2); err != nil {
		t.Fatal(err)
	}
	cp, err := s.ClaimCheckpoint(ctx, "p1", "proj", 2)
	if err != nil {
		t.Fatal(err)
	}
	var reads atomic.Int64
	done := make(chan error, 1)
	go func() {
		done <- gosync.WaitActivatedCounting(ctx, d.Pool, "p1", "proj", time.Minute, func() { reads.Add(1) })
	}()
	for reads.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	flooder := d.Conn(t)
	const notices = 2000
	start := time.Now()
	for i := 0; i < notices; i++ {
		if _, err := flooder.Exec(ctx, `SELECT pg_notify('sync_checkpoint_activated', '{"partition": "p1", "name": "proj"}')`); err != nil {
			t.Fatal(err)
		}
	}
	flood := time.Since(start)
	time.Sleep(300 * time.Millisecond) // let the last gap end
	// One read per 100 ms gap of the flood, plus the first and the last.
	if got, most := reads.Load(), int64(flood/(100*time.Millisecond))+4; got > most {
		t.Fatalf("%d notices in %v caused %d reads; want at most %d", notices, flood, got, most)
	}
	if r, err := s.ActivateCheckpoint(ctx, gosync.CheckpointActivation{Partition: "p1", Name: "proj", OwnerEpoch: cp.OwnerEpoch, Watermark: 0, Sources: []string{"todos"}}); err != nil || r != gosync.ActivationActivated {
		t.Fatalf("activate: %q, %v", r, err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitActivated did not wake on the real activation")
	}
	t.Logf("%d notices in %v: %d reads", notices, flood, reads.Load())
}
