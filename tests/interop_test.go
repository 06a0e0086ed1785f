package tests

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// upstreamPush is a push the way the upstream server's Postgres storage
// writes it, in one transaction on partition p1 (see upstreamPushTx).
func upstreamPush(ctx context.Context, pool *pgxpool.Pool, clientCommitID string, writerVersion *int64) (int64, error) {
	var seq int64
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) {
		seq, err = upstreamPushTx(ctx, tx, "p1", clientCommitID, writerVersion)
		return err
	})
	return seq, err
}

// upstreamPushTx is the upstream server's push statements in tx: allocate
// the seq by upserting sync_partitions and insert the commit in one
// statement, then its change, the change's scope and the push result.
// writerVersion nil is an upstream server before 0.23.
func upstreamPushTx(ctx context.Context, tx pgx.Tx, partition, clientCommitID string, writerVersion *int64) (int64, error) {
	var seq int64
	err := tx.QueryRow(ctx, `
		WITH allocated AS (
		  INSERT INTO sync_partitions(partition, max_commit_seq) VALUES ($1, 1)
		  ON CONFLICT (partition) DO UPDATE SET max_commit_seq = sync_partitions.max_commit_seq + 1
		  RETURNING max_commit_seq
		)
		INSERT INTO sync_commits(partition, commit_seq, client_id, client_commit_id, actor_id, created_at_ms, writer_version)
		SELECT $1, max_commit_seq, $2, $3, $4, $5, $6 FROM allocated
		RETURNING commit_seq`, partition, "c1", clientCommitID, "alice", int64(1700000000000), writerVersion).Scan(&seq)
	if err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO sync_changes(partition, commit_seq, idx, tbl, row_id, op, row_version, scopes, payload)
		VALUES ($1, $2, 0, 'todos', $3, 1, 1, '{"owner": "alice"}', '{}')`, partition, seq, "t-"+clientCommitID); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO sync_change_scopes(partition, tbl, var, value, commit_seq)
		VALUES ($1, 'todos', 'owner', 'alice', $2)`, partition, seq); err != nil {
		return 0, err
	}
	_, err = tx.Exec(ctx, `INSERT INTO sync_push_results(partition, client_id, client_commit_id, result)
		VALUES ($1, $2, $3, $4)`, partition, "c1", clientCommitID, fmt.Sprintf(`{"status": "applied", "commitSeq": %d}`, seq))
	return seq, err
}

// TestInteropUpstreamPush: the upstream server's DDL and gosync's
// migrations meet in either order, and an upstream-shaped push appends to a
// gosync database. Once gosync raises a fence, that push is rejected with
// sync.storage.writer_fence_rejected, at writer_version 1 or NULL (an
// upstream server before 0.23), and leaves no row and no seq behind; at the
// fence's version it appends again.
func TestInteropUpstreamPush(t *testing.T) {
	orders := []struct {
		name  string
		setup func(t *testing.T) *pgtest.DB
	}{
		{"upstream DDL on a gosync database", func(t *testing.T) *pgtest.DB {
			d := pgtest.New(t)
			catalog := dumpWholeCatalog(t, d.Pool)
			execFile(t, d.Pool, "testdata/upstream_0_22.sql")
			if got := dumpWholeCatalog(t, d.Pool); got != catalog {
				t.Fatalf("upstream DDL changed gosync's catalog:\n%s", lineDiff(catalog, got))
			}
			return d
		}},
		{"gosync migrations on an upstream database", func(t *testing.T) *pgtest.DB {
			d := upstreamDB(t, false)
			if _, err := gosync.Migrate(context.Background(), d.Pool); err != nil {
				t.Fatal(err)
			}
			return d
		}},
	}
	for _, order := range orders {
		t.Run(order.name, func(t *testing.T) {
			ctx := context.Background()
			d := order.setup(t)
			if seq, err := upstreamPush(ctx, d.Pool, "cc1", nil); err != nil || seq != 1 {
				t.Fatalf("upstream push before a fence = %d, %v; want seq 1", seq, err)
			}
			if seq, err := upstreamPush(ctx, d.Pool, "cc2", v(1)); err != nil || seq != 2 {
				t.Fatalf("upstream push with writer_version 1 = %d, %v; want seq 2", seq, err)
			}
			if _, err := d.Pool.Exec(ctx, "SELECT sync_declare_checkpoint('p1', 'todos_by_owner', 2)"); err != nil {
				t.Fatal(err)
			}
			before := logState(t, d)
			for _, wv := range []*int64{v(1), nil} {
				_, err := upstreamPush(ctx, d.Pool, "cc3", wv)
				if !errors.Is(gosync.MapError(err), gosync.ErrWriterFenceRejected) {
					t.Fatalf("fenced upstream push (writer_version %v): %v, want %v", wv, err, gosync.ErrWriterFenceRejected)
				}
				if after := logState(t, d); after != before {
					t.Fatalf("a rejected push left rows behind:\nbefore %s\nafter  %s", before, after)
				}
			}
			if seq, err := upstreamPush(ctx, d.Pool, "cc3", v(2)); err != nil || seq != 3 {
				t.Fatalf("upstream push at the fence's version = %d, %v; want seq 3", seq, err)
			}
		})
	}
}
