package gosync

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// ActivationChannel is the LISTEN/NOTIFY channel sync_activate_checkpoint
// notifies on commit, with payload {"partition": ..., "name": ...}.
const ActivationChannel = "sync_checkpoint_activated"

// WaitActivated blocks until the checkpoint is activated or ctx ends. It
// LISTENs on ActivationChannel and re-reads the checkpoint when a matching
// notification arrives; it also re-reads every pollEvery (default 5s), so a
// lost notification (a dropped connection, a failover) delays it, never
// strands it.
//
// Any role may NOTIFY on the channel, so wake-ups are coalesced: after a
// read, notices are drained for at least 100 ms before the next read,
// and a flood costs one read per gap, not one per notice.
func WaitActivated(ctx context.Context, pool *pgxpool.Pool, partition, name string, pollEvery time.Duration) error {
	return waitActivated(ctx, pool, partition, name, pollEvery, nil)
}

// minRereadGap is the least time between two reads woken by notifications.
const minRereadGap = 100 * time.Millisecond

// waitActivated is WaitActivated with a hook called before every read (tests
// count the reads).
func waitActivated(ctx context.Context, pool *pgxpool.Pool, partition, name string, pollEvery time.Duration, onRead func()) error {
	if pollEvery <= 0 {
		pollEvery = 5 * time.Second
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+ActivationChannel); err != nil {
		return err
	}
	defer conn.Exec(context.WithoutCancel(ctx), "UNLISTEN "+ActivationChannel)
	s := New(pool)
	for {
		// Read after LISTEN: an activation committed in between is either
		// seen here or notified below.
		if onRead != nil {
			onRead()
		}
		read := time.Now()
		cp, err := s.Checkpoint(ctx, partition, name)
		if err != nil {
			return err
		}
		if cp.State == StateActivated {
			return nil
		}
		// Wait for a matching notice or the poll interval; a matching notice
		// inside the gap only shortens the wait to the gap's end.
		deadline := read.Add(pollEvery)
		for woken := false; ; {
			waitCtx, cancel := context.WithDeadline(ctx, deadline)
			n, err := conn.Conn().WaitForNotification(waitCtx)
			cancel()
			if err != nil {
				break // the deadline passed (or ctx ended: checked below)
			}
			var ref CheckpointRef
			if woken || json.Unmarshal([]byte(n.Payload), &ref) != nil || ref.Partition != partition || ref.Name != name {
				continue
			}
			woken = true
			if gapEnd := read.Add(minRereadGap); gapEnd.Before(deadline) {
				deadline = gapEnd
			}
			if !time.Now().Before(deadline) {
				break
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if conn.Conn().IsClosed() {
			return errors.New("gosync: WaitActivated: listening connection closed")
		}
	}
}
