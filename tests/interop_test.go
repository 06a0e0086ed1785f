package tests

import (
	"context"
	"errors"
	"testing"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// TestInteropUpstreamPush: the upstream server's DDL and gosync's
// migrations meet in either order, and an upstream-shaped push appends to a
// gosync database. Once gosync raises a fence, that push is rejected with
// sync.storage.writer_fence_rejected, at writer_version 1 or NULL (an
// upstream server before 0.23), and leaves no row and no seq behind; at the
// fence's version it appends again.
func TestInteropUpstreamPush(t *testing.T) {
	t.Parallel()
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
			t.Parallel()
			ctx := context.Background()
			d := order.setup(t)
			if seq, err := upstreamPush(ctx, d.Pool, "cc1", nil); err != nil || seq != 1 {
				t.Fatalf("upstream push before a fence = %d, %v; want seq 1", seq, err)
			}
			if seq, err := upstreamPush(ctx, d.Pool, "cc2", v(1)); err != nil || seq != 2 {
				t.Fatalf("upstream push with writer_version 1 = %d, %v; want seq 2", seq, err)
			}
			mustExec(t, d.Pool, "SELECT sync_declare_checkpoint('p1', 'todos_by_owner', 2)")
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
