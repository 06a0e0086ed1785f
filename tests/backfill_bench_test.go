package tests

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/todos"
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
