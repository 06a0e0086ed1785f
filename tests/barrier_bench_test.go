package tests

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gosync/gosync/gosync"
)

// BenchmarkServeGate: the gate in one round trip (sync_serve_gate) against
// the upstream shape (three queries) and a bare SELECT 1, on a database with
// 20 checkpoints: in the steady state (all activated, nothing pending) and
// mid-migration (7 pending at the running version).
func BenchmarkServeGate(b *testing.B) {
	ctx := context.Background()
	_, pool := benchPool(b)
	mustExec(b, pool, `INSERT INTO sync_schema_meta VALUES (1, 2, '{}')`)
	mustExec(b, pool, `INSERT INTO sync_partition_registry VALUES ('p1', 'e1', false, 0)`)
	for i := 0; i < 20; i++ {
		partition := fmt.Sprintf("p%d", i)
		mustExec(b, pool, `SELECT sync_declare_checkpoint($1, 'steady', 2)`, partition)
		mustExec(b, pool, `SELECT sync_claim_checkpoint($1, 'steady', 2)`, partition)
		mustExec(b, pool, `SELECT sync_activate_checkpoint($1, 'steady', 1, 0, '{}')`, partition)
		mustExec(b, pool, `SELECT sync_declare_checkpoint($1, 'next', $2)`, partition, 3+i%3)
	}
	store := gosync.New(pool)
	gateAt := func(running int64) func(b *testing.B) {
		return func(b *testing.B) {
			for b.Loop() {
				if _, err := store.ReadServeGate(ctx, "p1", running); err != nil {
					b.Fatal(err)
				}
			}
		}
	}

	base := benchVariant(b, "select_1", 0, "", func(b *testing.B) {
		var one int
		for b.Loop() {
			if err := pool.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
				b.Fatal(err)
			}
		}
	})
	steady := benchVariant(b, "sync_serve_gate/steady", base, "select_1", gateAt(2))
	pending := benchVariant(b, "sync_serve_gate/7_pending", base, "select_1", gateAt(3))
	three := benchVariant(b, "three_queries/steady", base, "select_1", func(b *testing.B) {
		for b.Loop() {
			var version int64
			var epoch string
			if err := pool.QueryRow(ctx, "SELECT schema_version FROM sync_schema_meta WHERE id = 1").Scan(&version); err != nil {
				b.Fatal(err)
			}
			if err := pool.QueryRow(ctx, "SELECT log_epoch FROM sync_partition_registry WHERE partition = $1", "p1").Scan(&epoch); err != nil {
				b.Fatal(err)
			}
			rows, _ := pool.Query(ctx, "SELECT partition, name FROM sync_backfill_checkpoints WHERE schema_version = $1 AND state <> 'activated'", 2)
			if _, err := pgx.CollectRows(rows, pgx.RowToStructByPos[gosync.CheckpointRef]); err != nil {
				b.Fatal(err)
			}
		}
	})
	ratioLine("serve gate (steady): sync_serve_gate / SELECT 1", steady/base, "<= 1.3")
	ratioLine("serve gate (7 pending): sync_serve_gate / SELECT 1", pending/base, "<= 1.3")
	ratioLine("serve gate (steady): three queries / sync_serve_gate", three/steady, ">= 2")
}

// BenchmarkCommitInsert: single-row commit appends with a fence row in force
// against the same appends with the fence trigger disabled.
func BenchmarkCommitInsert(b *testing.B) {
	ctx := context.Background()
	setup := func(b *testing.B, disableTrigger bool) func(b *testing.B) {
		_, pool := benchPool(b)
		mustExec(b, pool, `INSERT INTO sync_writer_fence VALUES ('p', 2)`)
		if disableTrigger {
			mustExec(b, pool, `ALTER TABLE sync_commits DISABLE TRIGGER sync_commits_writer_fence`)
		}
		return func(b *testing.B) {
			for b.Loop() {
				if _, err := appendCommit(ctx, pool, "p", v(2)); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	withoutFence := setup(b, true)
	withFence := setup(b, false)
	base := benchVariant(b, "trigger_disabled", 0, "", withoutFence)
	fenced := benchVariant(b, "fence_row_present", base, "trigger_disabled", withFence)
	ratioLine("commit insert throughput: fenced / trigger disabled", base/fenced, ">= 0.95")
}

// BenchmarkCoverageCheck: the activation coverage check on a log of 10^4
// against one of 10^6 changes. Index-driven, its cost follows the changes
// above the watermark, not the log size.
func BenchmarkCoverageCheck(b *testing.B) {
	ctx := context.Background()
	check := func(b *testing.B, n int) func(b *testing.B) {
		_, pool := benchPool(b)
		fillChanges(b, pool, n)
		store := gosync.New(pool)
		return func(b *testing.B) {
			for b.Loop() {
				c, err := store.SourceChangesAbove(ctx, "p", []string{"todos"}, int64(n))
				if err != nil || c != gosync.CoverageClean {
					b.Fatalf("coverage = %q, %v", c, err)
				}
			}
		}
	}
	small, large := check(b, 10_000), check(b, 1_000_000)
	base := benchVariant(b, "changes_1e4", 0, "", small)
	big := benchVariant(b, "changes_1e6", base, "changes_1e4", large)
	ratioLine("coverage check: 10^6 / 10^4 changes", big/base, "<= 2")
}
