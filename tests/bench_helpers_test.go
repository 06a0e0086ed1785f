package tests

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gosync/gosync/internal/pgtest"
)

// variant is one side of a comparison: op runs one operation.
type variant struct {
	name string
	op   func() error
}

// benchInterleaved runs every variant once per iteration, rotating which
// goes first, and reports each variant's mean as "<name>-ns/op" and its
// ratio to the first (the baseline) as "<name>/<baseline>". Interleaving
// keeps the comparison fair on a shared, noisy machine: drift hits every
// variant alike, and the baseline is measured in the same run.
func benchInterleaved(b *testing.B, variants ...variant) []float64 {
	b.Helper()
	total := make([]time.Duration, len(variants))
	n := 0
	for b.Loop() {
		for k := range variants {
			i := (n + k) % len(variants)
			start := time.Now()
			if err := variants[i].op(); err != nil {
				b.Fatalf("%s: %v", variants[i].name, err)
			}
			total[i] += time.Since(start)
		}
		n++
	}
	means := make([]float64, len(variants))
	for i, v := range variants {
		means[i] = float64(total[i].Nanoseconds()) / float64(n)
		b.ReportMetric(means[i], v.name+"-ns/op")
		if i > 0 {
			b.ReportMetric(means[i]/means[0], v.name+"/"+variants[0].name)
		}
	}
	return means
}

// ratioLine logs the comparison a benchmark exists for, with its goal.
// Benchmark logs are always printed, after the result line, so they never
// split a line benchstat reads.
func ratioLine(b *testing.B, name string, ratio float64, goal string) {
	b.Logf("ratio: %-52s %6.3f  (goal %s)", name, ratio, goal)
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

// fillChanges bulk-loads n changes into partition p, round-robin over five
// tables. A set-based load moves the head by n at once, which the head-only
// triggers refuse to any writer, so it runs as a restore does: in one
// transaction with session_replication_role = replica (the harness connects
// as a superuser).
func fillChanges(b testing.TB, pool *pgxpool.Pool, n int) {
	b.Helper()
	restore(b, pool, `INSERT INTO sync_changes
		SELECT 'p', g, 0, (ARRAY['todos','notes','lists','tags','users'])[1 + g % 5], 'r' || g, 1, 1, '{}', NULL
		  FROM generate_series(1, $1::int) g`, n)
	restore(b, pool, `INSERT INTO sync_partitions VALUES ('p', $1, 0)`, n)
	mustExec(b, pool, `ANALYZE sync_changes`)
}

// restore runs one statement with the triggers off (a bulk load of a
// synthetic log, as pg_restore would write it).
func restore(b testing.TB, pool *pgxpool.Pool, sql string, args ...any) {
	b.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, sql, args...)
		return err
	})
	if err != nil {
		b.Fatalf("%s: %v", sql, err)
	}
}
