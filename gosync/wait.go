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
func WaitActivated(ctx context.Context, pool *pgxpool.Pool, partition, name string, pollEvery time.Duration) error {
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
		cp, err := s.Checkpoint(ctx, partition, name)
		if err != nil {
			return err
		}
		if cp.State == StateActivated {
			return nil
		}
		waitCtx, cancel := context.WithTimeout(ctx, pollEvery)
		for {
			n, err := conn.Conn().WaitForNotification(waitCtx)
			if err != nil {
				break // the poll interval ended (or ctx did: checked below)
			}
			var ref CheckpointRef
			if json.Unmarshal([]byte(n.Payload), &ref) == nil && ref.Partition == partition && ref.Name == name {
				break
			}
		}
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		if conn.Conn().IsClosed() {
			return errors.New("gosync: WaitActivated: listening connection closed")
		}
	}
}
