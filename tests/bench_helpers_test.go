package tests

import (
	"context"
	"testing"
	"time"

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
