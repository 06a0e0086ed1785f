package tests

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// Upstream maintenance on a shared database (issue 18, deliverable 4):
// upstream's prune raises the horizon with an upsert, then deletes the log
// rows below it, as a member of the owner role (SECURITY.md, trust model).
// The partitions guard refused that upsert (its BEFORE INSERT trigger saw
// the proposed row: horizon above its head 0) before migration 00025; and a
// DELETE of log rows by any path left the horizon where it was, so coverage
// answered `clean` over deleted history.

// upstreamSetHorizon and upstreamPruneDeletes are upstream's prune. Its
// exact statements were not observed (only its storage interface's
// setHorizonSeq / pruneCommitsThrough names are known): these are the
// natural ones, an upsert of the horizon, then one DELETE per log table.
const upstreamSetHorizon = `INSERT INTO sync_partitions(partition, max_commit_seq, horizon_seq) VALUES ($1, 0, $2)
	ON CONFLICT (partition) DO UPDATE SET horizon_seq = EXCLUDED.horizon_seq`

var upstreamPruneDeletes = []string{
	`DELETE FROM sync_change_scopes WHERE partition = $1 AND commit_seq <= $2`,
	`DELETE FROM sync_changes WHERE partition = $1 AND commit_seq <= $2`,
	`DELETE FROM sync_commits WHERE partition = $1 AND commit_seq <= $2`,
}

// upstreamPrune runs upstream's prune through seq in tx.
func upstreamPrune(ctx context.Context, tx pgx.Tx, partition string, seq int64) error {
	if _, err := tx.Exec(ctx, upstreamSetHorizon, partition, seq); err != nil {
		return err
	}
	for _, del := range upstreamPruneDeletes {
		if _, err := tx.Exec(ctx, del, partition, seq); err != nil {
			return err
		}
	}
	return nil
}

// ownedDB is a database migrated by a NOLOGIN owner role (the recommended
// deployment), with an upstream login that is a member of it.
func ownedDB(t *testing.T) (*pgtest.DB, *pgxpool.Pool) {
	t.Helper()
	d := pgtest.NewEmpty(t)
	owner := d.Name + "_owner"
	newRole(t, d, owner, "NOLOGIN CREATEROLE")
	mustExec(t, d.Pool, "ALTER SCHEMA public OWNER TO "+ident(owner))
	t.Cleanup(func() { _, _ = d.Pool.Exec(context.Background(), "ALTER SCHEMA public OWNER TO pg_database_owner") })
	if _, err := gosync.Migrate(context.Background(), d.Pool, gosync.WithOwner(owner)); err != nil {
		t.Fatal(err)
	}
	up, _ := multiLogin(t, d, "upstream", owner)
	return d, up
}

var seedCounter atomic.Int64

// seedCommits gives partition n more commits by upstream-shaped pushes.
func seedCommits(t *testing.T, writer *pgxpool.Pool, partition string, n int) {
	t.Helper()
	ctx := context.Background()
	for j := 0; j < n; j++ {
		if err := pgx.BeginFunc(ctx, writer, func(tx pgx.Tx) error {
			_, err := upstreamPushTx(ctx, tx, partition, fmt.Sprintf("seed-%s-%d", partition, seedCounter.Add(1)), v(1))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
}

func horizonOf(t *testing.T, q querier, partition string) int64 {
	t.Helper()
	return queryOne[int64](t, q, "SELECT horizon_seq FROM sync_partitions WHERE partition = $1", partition)
}

func coverage(t *testing.T, d *pgtest.DB, partition string, seq int64) gosync.Coverage {
	t.Helper()
	c, err := gosync.New(d.Pool).SourceChangesAbove(context.Background(), partition, []string{"todos"}, seq)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestUpstreamPruneAsOwner: upstream's prune, as its login (a member of the
// owner role), under every isolation level: the horizon rises, the rows
// below go, the rest stays. A
// prune over a head left without a commit on a partition with no fence row
// (nothing to mark the transaction with) raises the horizon to that head.
// The horizon never falls: upstream's upsert with a lower horizon is
// refused.
func TestUpstreamPruneAsOwner(t *testing.T) {
	ctx := context.Background()
	d, up := ownedDB(t)
	writer := loginAs(t, d, "sync_writer", nil)
	for i, iso := range isoLevels {
		partition := fmt.Sprintf("u%d", i)
		t.Run(string(iso), func(t *testing.T) {
			seedCommits(t, writer, partition, 3)
			if err := pgx.BeginTxFunc(ctx, up, pgx.TxOptions{IsoLevel: iso}, func(tx pgx.Tx) error {
				return upstreamPrune(ctx, tx, partition, 2)
			}); err != nil {
				t.Fatalf("upstream's prune as the owner: %v", err)
			}
			if h := horizonOf(t, d.Pool, partition); h != 2 {
				t.Fatalf("horizon %d after the prune through 2", h)
			}
			if got := queryOne[string](t, d.Pool, `SELECT string_agg(commit_seq::text, ',' ORDER BY commit_seq) FROM sync_commits WHERE partition = $1`, partition); got != "3" {
				t.Fatalf("commits left: %s, want 3", got)
			}
			// The horizon never falls, through upstream's upsert either.
			before := attackState(t, d)
			err := pgx.BeginTxFunc(ctx, up, pgx.TxOptions{IsoLevel: iso}, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, upstreamSetHorizon, partition, 1)
				return err
			})
			refusedWith(t, err, "sync.storage.partition_seq_rejected")
			if after := attackState(t, d); after != before {
				t.Fatalf("a refused lowering changed the database:\nbefore %s\nafter  %s", before, after)
			}
			// Past the head is refused too.
			err = pgx.BeginTxFunc(ctx, up, pgx.TxOptions{IsoLevel: iso}, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, upstreamSetHorizon, partition, 99)
				return err
			})
			refusedWith(t, err, "sync.storage.partition_seq_rejected")
			// Upstream's push still lands above.
			if seq := mustPush(t, writer, partition, "todos", 1); seq != 4 {
				t.Fatalf("push after the prune at %d, want 4", seq)
			}
			// An empty head on a partition without a fence row: the prune
			// passes, the horizon rises to the head, and nothing can be
			// appended there in its transaction.
			hole := makeHole(t, writer, partition)
			before = attackState(t, d)
			err = pgx.BeginTxFunc(ctx, up, pgx.TxOptions{IsoLevel: iso}, func(tx pgx.Tx) error {
				if err := upstreamPrune(ctx, tx, partition, 3); err != nil {
					return err
				}
				return lateCommit(ctx, tx, partition, hole)
			})
			refusedWith(t, err, "sync.storage.commit_not_at_head")
			if after := attackState(t, d); after != before {
				t.Fatalf("a refused fill changed the database:\nbefore %s\nafter  %s", before, after)
			}
			if err := pgx.BeginTxFunc(ctx, up, pgx.TxOptions{IsoLevel: iso}, func(tx pgx.Tx) error {
				return upstreamPrune(ctx, tx, partition, 3)
			}); err != nil {
				t.Fatalf("prune over an empty head: %v", err)
			}
			if h := horizonOf(t, d.Pool, partition); h != hole {
				t.Fatalf("horizon %d after a prune over the empty head %d of an undeclared partition, want the head", h, hole)
			}
			if seq := mustPush(t, writer, partition, "todos", 1); seq != hole+1 {
				t.Fatalf("push after the prune at %d, want %d", seq, hole+1)
			}
		})
	}
	// A lower role gets nothing: no DELETE, no horizon write.
	for _, stmt := range append([]string{upstreamSetHorizon}, upstreamPruneDeletes...) {
		if _, err := writer.Exec(ctx, stmt, "u0", 1); sqlState(err) != "42501" && !errors.Is(gosync.MapError(err), gosync.ErrPartitionSeqRejected) {
			t.Errorf("a writer's %q: %v; want 42501 or partition_seq_rejected", stmt, err)
		}
	}
}

// TestUpstreamPruneInterleaved: upstream's prune in one session while a
// writer's push holds the partition row in another. READ COMMITTED: the
// prune waits, then raises the horizon over the committed push (which
// stays). REPEATABLE READ / SERIALIZABLE: the prune's snapshot predates the
// push, so it fails with 40001 and changes nothing.
func TestUpstreamPruneInterleaved(t *testing.T) {
	ctx := context.Background()
	d, up := ownedDB(t)
	writer := loginAs(t, d, "sync_writer", nil)
	for i, iso := range isoLevels {
		partition := fmt.Sprintf("i%d", i)
		t.Run(string(iso), func(t *testing.T) {
			seedCommits(t, writer, partition, 2)
			push, err := writer.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer push.Rollback(ctx)
			seq, err := upstreamPushTx(ctx, push, partition, "held", v(1))
			if err != nil {
				t.Fatal(err)
			}
			prune, err := up.BeginTx(ctx, pgx.TxOptions{IsoLevel: iso})
			if err != nil {
				t.Fatal(err)
			}
			defer prune.Rollback(ctx)
			mustExec(t, prune, "SELECT count(*) FROM sync_partitions") // the snapshot
			done := make(chan error, 1)
			go func() { done <- upstreamPrune(ctx, prune, partition, 2) }()
			waitForLockWaiters(t, d, 1)
			if err := push.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			err = within(t, "the prune", done)
			if iso == pgx.ReadCommitted {
				if err != nil {
					t.Fatalf("prune after the push: %v", err)
				}
				if err := prune.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				if h := horizonOf(t, d.Pool, partition); h != 2 {
					t.Fatalf("horizon %d, want 2", h)
				}
				if n := countCommits(t, d.Pool, partition); n != 1 || maxCommitSeq(t, d.Pool, partition) != seq {
					t.Fatalf("%d commits left (head %d), want the push at %d", n, maxCommitSeq(t, d.Pool, partition), seq)
				}
				return
			}
			refusedWith(t, err, "40001")
			_ = prune.Rollback(ctx)
			if h := horizonOf(t, d.Pool, partition); h != 0 {
				t.Fatalf("horizon %d after a failed prune", h)
			}
			if n := countCommits(t, d.Pool, partition); n != 3 {
				t.Fatalf("%d commits after a failed prune, want 3", n)
			}
		})
	}
}

// TestDeletedHistoryRaisesHorizon: log rows deleted by any path leave the
// horizon at or above every deleted seq, so coverage never answers `clean`
// over deleted history: a DBA's DELETE of commits, of changes only (above
// a watermark: the history that would show a change), of change scopes, a
// TRUNCATE, and sync_prune_log. The horizon never falls and never passes
// the head. Before 00025 each left the horizon at 0 and coverage `clean`.
func TestDeletedHistoryRaisesHorizon(t *testing.T) {
	ctx := context.Background()
	d, up := ownedDB(t)
	writer := loginAs(t, d, "sync_writer", nil)
	admin := loginAs(t, d, "sync_admin", nil)
	seed := func(partition string, n int) { seedCommits(t, writer, partition, n) }
	for i, iso := range isoLevels {
		t.Run(string(iso), func(t *testing.T) {
			run := func(stmt string, args ...any) {
				t.Helper()
				if err := pgx.BeginTxFunc(ctx, up, pgx.TxOptions{IsoLevel: iso}, func(tx pgx.Tx) error {
					_, err := tx.Exec(ctx, stmt, args...)
					return err
				}); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
			// Changes deleted above the watermark 1: coverage must not say clean.
			p := fmt.Sprintf("c%d", i)
			seed(p, 3)
			if c := coverage(t, d, p, 1); c != gosync.CoverageChanged {
				t.Fatalf("coverage before: %s", c)
			}
			run(`DELETE FROM sync_changes WHERE partition = $1 AND commit_seq >= 2`, p)
			if h := horizonOf(t, d.Pool, p); h != 3 {
				t.Fatalf("horizon %d after deleting changes 2..3, want 3", h)
			}
			if c := coverage(t, d, p, 1); c != gosync.CoverageUnverifiable {
				t.Fatalf("coverage at 1 over deleted changes: %s", c)
			}
			// Deleting lower rows later never lowers it.
			run(`DELETE FROM sync_commits WHERE partition = $1 AND commit_seq = 1`, p)
			if h := horizonOf(t, d.Pool, p); h != 3 {
				t.Fatalf("horizon %d after a lower delete, want 3", h)
			}
			// Commits only, change scopes only: each raises.
			p = fmt.Sprintf("k%d", i)
			seed(p, 3)
			run(`DELETE FROM sync_commits WHERE partition = $1 AND commit_seq = 2`, p)
			if h := horizonOf(t, d.Pool, p); h != 2 {
				t.Fatalf("horizon %d after deleting commit 2", h)
			}
			run(`DELETE FROM sync_change_scopes WHERE partition = $1 AND commit_seq = 3`, p)
			if h := horizonOf(t, d.Pool, p); h != 3 {
				t.Fatalf("horizon %d after deleting the scopes of 3", h)
			}
			// sync_prune_log (sync_admin) through 1: the horizon is 1.
			p = fmt.Sprintf("s%d", i)
			seed(p, 2)
			if h := queryOne[int64](t, admin, `SELECT sync_prune_log($1, 1)`, p); h != 1 || horizonOf(t, d.Pool, p) != 1 {
				t.Fatalf("sync_prune_log through 1: horizon %d", h)
			}
		})
	}
	// TRUNCATE (the owner): every horizon rises to its head first.
	seed("t", 2)
	mustExec(t, up, `TRUNCATE sync_change_scopes, sync_changes`)
	if n := queryOne[int64](t, d.Pool, `SELECT count(*) FROM sync_partitions WHERE horizon_seq <> max_commit_seq`); n != 0 {
		t.Fatalf("%d partitions below their head after a TRUNCATE", n)
	}
	if c := coverage(t, d, "t", 1); c != gosync.CoverageUnverifiable {
		t.Fatalf("coverage at 1 after a TRUNCATE: %s", c)
	}
	// Lower roles cannot delete log rows at all.
	for _, who := range []*pgxpool.Pool{writer, admin} {
		for _, tbl := range []string{"sync_commits", "sync_changes", "sync_change_scopes"} {
			if _, err := who.Exec(ctx, "DELETE FROM "+tbl); sqlState(err) != "42501" {
				t.Errorf("DELETE FROM %s by a sync role: %v; want 42501", tbl, err)
			}
		}
	}
}
