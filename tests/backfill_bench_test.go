package tests

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/gosync/gosync/examples/todos"
	"github.com/gosync/gosync/gosync"
)

// BenchmarkBackfill: backfill throughput over a log of 20,000 todo changes
// (each a distinct todo) at batch sizes 100, 1,000 and 10,000, with the
// set-based todos.ApplyRange, against a bare INSERT ... SELECT of the same rows.
// One operation is one whole fill: a fresh checkpoint, claim, every batch,
// activation.
func BenchmarkBackfill(b *testing.B) {
	const changes = 20_000
	ctx := context.Background()
	_, pool := benchPool(b)
	s := gosync.New(pool)
	if err := s.EnsureSchema(ctx, todos.Schema(1), nil, todos.SchemaChange(1)); err != nil {
		b.Fatal(err)
	}
	if err := todos.SeedLog(ctx, pool, "p1", changes, changes, 1); err != nil {
		b.Fatal(err)
	}
	if err := s.EnsureSchema(ctx, todos.Schema(2), nil, todos.SchemaChange(2)); err != nil {
		b.Fatal(err)
	}
	mustExec(b, pool, "ANALYZE")
	var runs atomic.Int64
	fill := func(batch int) func() error {
		return func() error {
			mustExec(b, pool, "TRUNCATE todos_by_owner")
			name := fmt.Sprintf("proj_%d", runs.Add(1))
			if _, err := s.DeclareCheckpoint(ctx, "p1", name, 2); err != nil {
				return err
			}
			_, err := s.RunBackfill(ctx, gosync.Backfill{Partition: "p1", Name: name, SchemaVersion: 2,
				Sources: []string{todos.Source}, ApplyRange: todos.ApplyRange,
				Knobs: gosync.NewBackfillKnobs(gosync.BackfillSettings{BatchSize: batch})})
			return err
		}
	}
	m := benchInterleaved(b,
		variant{"bare_insert_select", func() error {
			mustExec(b, pool, "TRUNCATE todos_by_owner")
			_, err := pool.Exec(ctx, "INSERT INTO todos_by_owner SELECT * FROM ("+todos.RebuildQuery+") r", "p1")
			return err
		}},
		variant{"batch_100", fill(100)},
		variant{"batch_1000", fill(1000)},
		variant{"batch_10000", fill(10000)},
	)
	for i, name := range []string{"100", "1,000", "10,000"} {
		b.ReportMetric(changes*1e9/m[i+1], "batch_"+name+"_changes/s")
		ratioLine(b, "backfill throughput / bare INSERT ... SELECT, batch "+name, m[0]/m[i+1], map[bool]string{true: ">= 0.9", false: "(recorded)"}[i == 1])
	}
	b.ReportMetric(changes*1e9/m[0], "bare_changes/s")
}

// BenchmarkFleetBackfill: RunBackfills over 1,000 partitions of 100 todo
// changes each (batch 1,000: one batch per partition) with 1, 2 and 4
// workers, against one bare INSERT ... SELECT rebuilding the projection of
// every partition at once. Each fill declares a fresh projection name in
// every partition (one sync_install_checkpoints call, timed with it).
func BenchmarkFleetBackfill(b *testing.B) {
	const partitions, perPartition = 1000, 100
	ctx := context.Background()
	d, _ := benchPool(b)
	pool := d.Pool // several connections: the workers run at once
	s := gosync.New(pool)
	if err := s.EnsureSchema(ctx, todos.Schema(1), nil, todos.SchemaChange(1)); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < partitions; i++ {
		if err := todos.SeedLog(ctx, pool, fmt.Sprintf("t%04d", i), perPartition, perPartition, 1); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.EnsureSchema(ctx, todos.Schema(2), nil, todos.SchemaChange(2)); err != nil {
		b.Fatal(err)
	}
	mustExec(b, pool, "ANALYZE")
	var runs atomic.Int64
	fleet := func(workers int) func() error {
		return func() error {
			mustExec(b, pool, "TRUNCATE todos_by_owner")
			name := fmt.Sprintf("proj_%d", runs.Add(1))
			mustExec(b, pool, `SELECT sync_install_checkpoints(array_agg(partition), array_agg($1::text), 2) FROM sync_partitions`, name)
			res, err := s.RunBackfills(ctx, gosync.Fleet{Backfill: gosync.Backfill{Name: name, SchemaVersion: 2,
				Sources: []string{todos.Source}, ApplyRange: todos.ApplyRange,
				Knobs: gosync.NewBackfillKnobs(gosync.BackfillSettings{BatchSize: 1000})}, Workers: workers})
			if err == nil && len(res.Activated) != partitions {
				err = fmt.Errorf("%d partitions activated", len(res.Activated))
			}
			return err
		}
	}
	m := benchInterleaved(b,
		variant{"bare_insert_select", func() error {
			mustExec(b, pool, "TRUNCATE todos_by_owner")
			_, err := pool.Exec(ctx, `INSERT INTO todos_by_owner
				SELECT partition, row_id, convert_from(payload, 'UTF8')::jsonb ->> 'owner', convert_from(payload, 'UTF8')::jsonb ->> 'title'
				  FROM (SELECT DISTINCT ON (partition, row_id) partition, row_id, op, payload FROM sync_changes
				         WHERE tbl = 'todos' ORDER BY partition, row_id, commit_seq DESC, idx DESC) last
				 WHERE op = 1`)
			return err
		}},
		variant{"workers_1", fleet(1)},
		variant{"workers_2", fleet(2)},
		variant{"workers_4", fleet(4)},
	)
	const changes = partitions * perPartition
	b.ReportMetric(changes*1e9/m[0], "bare_changes/s")
	for i, w := range []string{"1", "2", "4"} {
		b.ReportMetric(changes*1e9/m[i+1], "workers_"+w+"_changes/s")
		ratioLine(b, "fleet backfill throughput / bare INSERT ... SELECT, workers "+w, m[0]/m[i+1], "(recorded)")
	}
}
