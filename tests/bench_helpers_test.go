package tests

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gosync/gosync/internal/pgtest"
)

// benchVariant runs fn as a sub-benchmark and returns its ns/op. When base
// is non-zero it also reports the ratio to that baseline as a metric
// (benchstat reads it like ns/op), so every comparison is measured in the
// same run against the same server.
func benchVariant(b *testing.B, name string, base float64, baseName string, fn func(b *testing.B)) float64 {
	var nsPerOp float64
	b.Run(name, func(b *testing.B) {
		fn(b)
		nsPerOp = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		if base > 0 {
			b.ReportMetric(nsPerOp/base, "x_"+baseName)
		}
	})
	return nsPerOp
}

// ratioLine prints the comparison a benchmark exists for, with its goal.
func ratioLine(name string, ratio float64, goal string) {
	fmt.Printf("ratio: %-52s %6.3f  (goal %s)\n", name, ratio, goal)
}

// benchPool is a single-connection pool on a fresh database, so every
// variant pays the same pool overhead on the same warm session.
func benchPool(b *testing.B) (*pgtest.DB, *pgxpool.Pool) {
	b.Helper()
	d := pgtest.New(b)
	cfg, err := pgxpool.ParseConfig(d.URL)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns, cfg.MinConns = 1, 1
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return d, pool
}

func mustExec(b testing.TB, pool *pgxpool.Pool, sql string, args ...any) {
	b.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		b.Fatalf("%s: %v", sql, err)
	}
}

// fillChanges writes n changes to partition p, round-robin over five tables.
func fillChanges(b testing.TB, pool *pgxpool.Pool, n int) {
	b.Helper()
	mustExec(b, pool, `INSERT INTO sync_changes
		SELECT 'p', g, 0, (ARRAY['todos','notes','lists','tags','users'])[1 + g % 5], 'r' || g, 1, 1, '{}', NULL
		  FROM generate_series(1, $1::int) g`, n)
	mustExec(b, pool, `INSERT INTO sync_partitions VALUES ('p', $1, 0)`, n)
	mustExec(b, pool, `ANALYZE sync_changes`)
}
