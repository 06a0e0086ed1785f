package tests

import (
	"context"
	"errors"
	"testing"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

func TestPartitionRegistry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	s := gosync.New(d.Pool)
	first, err := s.TouchPartition(ctx, "p1")
	if err != nil || first.LogEpoch == "" || first.EpochRequired {
		t.Fatalf("touch = %+v, %v", first, err)
	}
	again, err := s.TouchPartition(ctx, "p1")
	if err != nil || again.LogEpoch != first.LogEpoch {
		t.Fatalf("second touch changed the epoch: %+v, %v", again, err)
	}
	mustExec(t, d.Pool, `INSERT INTO sync_clients VALUES ('p1', 'c1', 'u1', 1, 5, '[]', 0), ('p2', 'c2', 'u2', 1, 5, '[]', 0)`)
	rotated, err := s.RotateLogEpoch(ctx, "p1")
	if err != nil || rotated.LogEpoch == first.LogEpoch || !rotated.EpochRequired {
		t.Fatalf("rotate = %+v, %v", rotated, err)
	}
	var p1Clients, p2Clients int
	if err := d.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM sync_clients WHERE partition = 'p1'),
		(SELECT count(*) FROM sync_clients WHERE partition = 'p2')`).Scan(&p1Clients, &p2Clients); err != nil {
		t.Fatal(err)
	}
	if p1Clients != 0 || p2Clients != 1 {
		t.Fatalf("after rotating p1: %d p1 clients, %d p2 clients; want 0 and 1", p1Clients, p2Clients)
	}
	// The gate sees the new epoch: a client holding the old one is refused.
	r, err := s.ServeCheck(ctx, "p1", gosync.Server{SchemaVersion: 0, ExpectedEpoch: first.LogEpoch})
	if err != nil {
		t.Fatal(err)
	}
	if r == nil || r.Kind != gosync.RefusalEpoch {
		t.Fatalf("old epoch after rotation: refusal %+v, want epoch", r)
	}
}

func TestPruneLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := readyDB(t)
	for i := 0; i < 5; i++ {
		if _, err := s.Push(ctx, "p2", todoCommit(string(rune('a'+i)), 2), serverV2); err != nil {
			t.Fatal(err)
		}
	}
	h, err := s.PruneLog(ctx, "p2", 3)
	if err != nil || h != 3 {
		t.Fatalf("prune = %d, %v", h, err)
	}
	var commits, changes, scopes, minSeq int64
	if err := d.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM sync_commits WHERE partition = 'p2'),
		(SELECT count(*) FROM sync_changes WHERE partition = 'p2'),
		(SELECT count(*) FROM sync_change_scopes WHERE partition = 'p2' AND commit_seq <= 3),
		(SELECT min(commit_seq) FROM sync_commits WHERE partition = 'p2')`).Scan(&commits, &changes, &scopes, &minSeq); err != nil {
		t.Fatal(err)
	}
	if commits != 2 || changes != 4 || scopes != 0 || minSeq != 4 {
		t.Fatalf("after pruning through 3: %d commits, %d changes, %d old scopes, first seq %d", commits, changes, scopes, minSeq)
	}
	// The horizon never goes down, and a coverage check below it is unverifiable.
	if h, err := s.PruneLog(ctx, "p2", 1); err != nil || h != 3 {
		t.Fatalf("pruning below the horizon = %d, %v; want 3", h, err)
	}
	if c, err := s.SourceChangesAbove(ctx, "p2", []string{"other"}, 2); err != nil || c != gosync.CoverageUnverifiable {
		t.Fatalf("coverage below the horizon = %q, %v", c, err)
	}
	if _, err := s.PruneLog(ctx, "p2", 99); !errors.Is(err, gosync.ErrInvalidArgument) {
		t.Fatalf("pruning past the last commit: %v, want ErrInvalidArgument", err)
	}
}

func TestSegmentExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, s := readyDB(t) // todos_by_owner at v2 in p1
	if err := s.SegmentExpired(ctx, "p1", 1); !errors.Is(err, gosync.ErrSegmentExpired) {
		t.Fatalf("v1 segment of p1: %v, want ErrSegmentExpired", err)
	}
	if err := s.SegmentExpired(ctx, "p1", 2); err != nil {
		t.Fatalf("v2 segment of p1: %v", err)
	}
	if err := s.SegmentExpired(ctx, "p2", 1); err != nil {
		t.Fatalf("v1 segment of a partition without checkpoints: %v", err)
	}
}
