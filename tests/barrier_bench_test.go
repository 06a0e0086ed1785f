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
	gateAt := func(running int64) func() error {
		return func() error {
			_, err := store.ServeGate(ctx, "p1", gosync.Server{SchemaVersion: running})
			return err
		}
	}
	var one int
	m := benchInterleaved(b,
		variant{"select_1", func() error { return pool.QueryRow(ctx, "SELECT 1").Scan(&one) }},
		variant{"gate_steady", gateAt(2)},
		variant{"gate_7_pending", gateAt(3)},
		variant{"three_queries", func() error {
			var version int64
			var epoch string
			if err := pool.QueryRow(ctx, "SELECT schema_version FROM sync_schema_meta WHERE id = 1").Scan(&version); err != nil {
				return err
			}
			if err := pool.QueryRow(ctx, "SELECT log_epoch FROM sync_partition_registry WHERE partition = $1", "p1").Scan(&epoch); err != nil {
				return err
			}
			rows, _ := pool.Query(ctx, "SELECT partition, name FROM sync_backfill_checkpoints WHERE schema_version = $1 AND state <> 'activated'", 2)
			_, err := pgx.CollectRows(rows, pgx.RowToStructByPos[gosync.CheckpointRef])
			return err
		}},
	)
	ratioLine(b, "serve gate (steady): sync_serve_gate / SELECT 1", m[1]/m[0], "<= 1.3")
	ratioLine(b, "serve gate (7 pending): sync_serve_gate / SELECT 1", m[2]/m[0], "<= 1.3")
	ratioLine(b, "serve gate (steady): three queries / sync_serve_gate", m[3]/m[1], ">= 2")
}

// BenchmarkCommitInsert: single-row commit appends (the upstream server's
// allocate-and-insert statement) with a fence row in force and every barrier
// trigger on, against the same appends, in another database, with every
// trigger of sync_partitions and sync_commits disabled; and (00025) in a
// third database after an upstream 0.23 boot, whose body of
// syncular_writer_fence() checks the fence a second time.
func BenchmarkCommitInsert(b *testing.B) {
	ctx := context.Background()
	appender := func(disableTrigger, upstreamBooted bool) func() error {
		d, pool := benchPool(b)
		mustExec(b, pool, `INSERT INTO sync_writer_fence VALUES ('p', 2)`)
		if disableTrigger {
			mustExec(b, pool, `ALTER TABLE sync_commits DISABLE TRIGGER USER; ALTER TABLE sync_partitions DISABLE TRIGGER USER`)
		}
		if upstreamBooted {
			upstreamBoot(b, d)
		}
		return func() error {
			_, err := oldWriterCommit(ctx, pool, "p", v(2))
			return err
		}
	}
	m := benchInterleaved(b,
		variant{"trigger_disabled", appender(true, false)},
		variant{"fence_row_present", appender(false, false)},
		variant{"after_upstream_boot", appender(false, true)},
	)
	ratioLine(b, "commit insert throughput: fenced / triggers disabled", m[0]/m[1], ">= 0.90")
	ratioLine(b, "commit insert: after an upstream boot / gosync's body", m[1]/m[2], "measured (00025)")
}

// BenchmarkPushTenChanges: sync_append_commit of one commit with 10 changes
// (and their scopes) under every barrier trigger (fence, head-only, changes
// under their commit) against the same pushes, in another database, with
// every trigger of the log tables and sync_partitions disabled.
func BenchmarkPushTenChanges(b *testing.B) {
	ctx := context.Background()
	pusher := func(disableTriggers bool) func() error {
		_, pool := benchPool(b)
		mustExec(b, pool, `INSERT INTO sync_writer_fence VALUES ('p', 2); INSERT INTO sync_schema_meta VALUES (1, 2, '{}')`)
		if disableTriggers {
			mustExec(b, pool, `ALTER TABLE sync_commits DISABLE TRIGGER USER; ALTER TABLE sync_changes DISABLE TRIGGER USER;
				ALTER TABLE sync_change_scopes DISABLE TRIGGER USER; ALTER TABLE sync_partitions DISABLE TRIGGER USER`)
		}
		s := gosync.New(pool)
		n := 0
		return func() error {
			n++
			_, err := s.Push(ctx, "p", todoCommit(fmt.Sprintf("c%d", n), 10), gosync.Server{SchemaVersion: 2})
			return err
		}
	}
	m := benchInterleaved(b,
		variant{"triggers_disabled", pusher(true)},
		variant{"barrier_triggers", pusher(false)},
	)
	ratioLine(b, "push (10 changes) throughput: barrier / triggers disabled", m[0]/m[1], ">= 0.95")
}

// BenchmarkCoverageCheck: the activation coverage check on a log of 10^4
// against one of 10^6 changes. Index-driven, its cost follows the changes
// above the watermark, not the log size.
func BenchmarkCoverageCheck(b *testing.B) {
	ctx := context.Background()
	check := func(n int) func() error {
		_, pool := benchPool(b)
		fillChanges(b, pool, n)
		store := gosync.New(pool)
		return func() error {
			c, err := store.SourceChangesAbove(ctx, "p", []string{"todos"}, int64(n))
			if err == nil && c != gosync.CoverageClean {
				err = fmt.Errorf("coverage = %q", c)
			}
			return err
		}
	}
	m := benchInterleaved(b,
		variant{"changes_1e4", check(10_000)},
		variant{"changes_1e6", check(1_000_000)},
	)
	ratioLine(b, "coverage check: 10^6 / 10^4 changes", m[1]/m[0], "<= 2")
}

// BenchmarkServeCheck: the refusal rule (sync_serve_check) while a
// projection declared for every partition is pending in 10, 10^3 and 10^5
// partitions, against a bare SELECT 1. Index-driven, it costs the same at
// every size.
func BenchmarkServeCheck(b *testing.B) {
	ctx := context.Background()
	srv := gosync.Server{SchemaVersion: 2, Declared: []gosync.CheckpointDeclaration{
		{AllPartitions: true, Name: "proj", SchemaVersion: 2}, {AllPartitions: true, Name: "other", SchemaVersion: 2}}}
	check := func(n int) func() error {
		_, pool := benchPool(b)
		fillPending(b, pool, n)
		store := gosync.New(pool)
		return func() error {
			r, err := store.ServeCheck(ctx, "elsewhere", srv)
			if err == nil && r != nil {
				err = fmt.Errorf("refusal %+v", r)
			}
			return err
		}
	}
	_, one := benchPool(b)
	var x int
	m := benchInterleaved(b,
		variant{"select_1", func() error { return one.QueryRow(ctx, "SELECT 1").Scan(&x) }},
		variant{"pending_1e1", check(10)},
		variant{"pending_1e3", check(1_000)},
		variant{"pending_1e5", check(100_000)},
	)
	ratioLine(b, "serve check: 10^5 / 10 pending", m[3]/m[1], "<= 1.5")
	ratioLine(b, "serve check: 10^3 / 10 pending", m[2]/m[1], "<= 1.5")
	ratioLine(b, "serve check (10 pending) / SELECT 1", m[1]/m[0], "report")
}
