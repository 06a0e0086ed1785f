package tests

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// bareAppend is the baseline of BenchmarkPush: the same rows a push writes
// (seq allocation, commit, changes, change scopes, push result) in one
// statement, without the partition lock, the gate or the idempotency check.
const bareAppend = `
WITH allocated AS (
  INSERT INTO sync_partitions AS p (partition, max_commit_seq) VALUES ($1, 1)
  ON CONFLICT (partition) DO UPDATE SET max_commit_seq = p.max_commit_seq + 1
  RETURNING max_commit_seq AS seq
), commit AS (
  INSERT INTO sync_commits SELECT $1, seq, $2, $3, 'u1', 1000, 1 FROM allocated
), changes AS (
  INSERT INTO sync_changes
  SELECT $1, seq, i::int - 1, 'todos', r, 1, 1, '{"owner":["u1"]}', '\x7b7d'
    FROM allocated, unnest($4::text[]) WITH ORDINALITY AS c(r, i)
), scopes AS (
  INSERT INTO sync_change_scopes SELECT $1, 'todos', 'owner', 'u1', seq FROM allocated
)
INSERT INTO sync_push_results SELECT $1, $2, $3, jsonb_build_object('status', 'applied', 'commitSeq', seq) FROM allocated`

// BenchmarkPush: push throughput (a commit of 10 changes) at 1, 8 and 32
// concurrent writers, over distinct partitions and over one partition,
// against the bare inserts. One iteration is one round in which every
// writer commits once, on its own connection.
func BenchmarkPush(b *testing.B) {
	ctx := context.Background()
	for _, writers := range []int{1, 8, 32} {
		for _, shared := range []bool{false, true} {
			layout := "distinct_partitions"
			if shared {
				layout = "one_partition"
			}
			b.Run(fmt.Sprintf("writers_%d/%s", writers, layout), func(b *testing.B) {
				d := pgtest.New(b)
				cfg, err := pgxpool.ParseConfig(d.URL)
				if err != nil {
					b.Fatal(err)
				}
				cfg.MaxConns, cfg.MinConns = int32(writers), int32(writers)
				pool, err := pgxpool.NewWithConfig(ctx, cfg)
				if err != nil {
					b.Fatal(err)
				}
				defer pool.Close()
				s := gosync.New(pool)
				if err := s.EnsureSchema(ctx, todosSchema(1), nil, nil); err != nil {
					b.Fatal(err)
				}
				var ids atomic.Int64
				partition := func(variant string, w int) string {
					if shared {
						return variant
					}
					return fmt.Sprintf("%s-%d", variant, w)
				}
				round := func(op func(w int, id string) error) func() error {
					return func() error {
						var wg sync.WaitGroup
						errs := make([]error, writers)
						for w := 0; w < writers; w++ {
							wg.Add(1)
							go func(w int) {
								defer wg.Done()
								errs[w] = op(w, fmt.Sprintf("c%d", ids.Add(1)))
							}(w)
						}
						wg.Wait()
						for _, err := range errs {
							if err != nil {
								return err
							}
						}
						return nil
					}
				}
				rows := make([]string, 10)
				for i := range rows {
					rows[i] = fmt.Sprintf("r%d", i)
				}
				m := benchInterleaved(b,
					variant{"bare_insert", round(func(w int, id string) error {
						return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
							_, err := tx.Exec(ctx, bareAppend, partition("bare", w), "client", id, rows)
							return err
						})
					})},
					variant{"push", round(func(w int, id string) error {
						_, err := s.Push(ctx, partition("push", w), todoCommit(id, 10), serverV1)
						return err
					})},
				)
				b.ReportMetric(float64(writers)*1e9/m[1], "push_commits/s")
				b.ReportMetric(float64(writers)*1e9/m[0], "bare_commits/s")
				ratioLine(b, fmt.Sprintf("push throughput / bare inserts, %d writers, %s", writers, layout), m[0]/m[1], "(recorded)")
			})
		}
	}
}
