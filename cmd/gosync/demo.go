package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/gosync/gosync/examples/todos"
	"github.com/gosync/gosync/gosync"
)

// runDemo tells the migration barrier's story on a throwaway Postgres (or
// --db): a v1 fleet writes, a v2 server bumps the schema and declares a
// projection in every partition, the old writer is fenced out by the
// database, the gate holds v2 traffic back until the fleet backfill
// activates the projection, then v2 serves. --partitions N tells it at
// scale: N tenants, one set-based bump, a flat gate, a summary status.
func demoCmd(e *env) *cobra.Command {
	var commits, partitions, workers int
	c := &cobra.Command{Use: "demo", Args: cobra.NoArgs,
		Short: "the whole story on a throwaway Postgres (or an empty --db), step by step",
		Long: `The migration barrier step by step: a v1 fleet writes, a v2 server bumps the
schema and declares a projection in every partition, the old writer is
fenced out, the gate holds v2 back until the fleet backfill activates the
projection, then v2 serves. Without --db or DATABASE_URL it runs on a
throwaway local Postgres; a given database must be empty.`,
		RunE: func(*cobra.Command, []string) error {
			if commits < 1 || partitions < 1 || workers < 1 {
				return usagef("demo: --commits, --partitions and --workers must be >= 1")
			}
			return e.withThrowaway(func(pool *pgxpool.Pool) error {
				if err := requireEmpty(e, pool); err != nil {
					return err
				}
				return demo(e, pool, commits, partitions, workers)
			})
		}}
	c.Flags().IntVar(&commits, "commits", 20000, "commits the v1 fleet writes before the bump (spread over the partitions)")
	c.Flags().IntVar(&partitions, "partitions", 1, "partitions (tenants): p1 ... pN")
	c.Flags().IntVar(&workers, "workers", 2, "backfill workers")
	return c
}

// requireEmpty refuses a database that holds tables: the demo creates its
// own and would collide with (or write into) an application's.
func requireEmpty(e *env, pool *pgxpool.Pool) error {
	var tables int
	if err := pool.QueryRow(e.ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()").Scan(&tables); err != nil {
		return err
	}
	if tables > 0 {
		return fmt.Errorf("the demo needs an empty database (this one has %d tables): unset DATABASE_URL for a throwaway one", tables)
	}
	return nil
}

func demo(e *env, pool *pgxpool.Pool, commits, partitions, workers int) error {
	ctx := e.ctx
	s := gosync.New(pool)
	started := time.Now()
	n := 0
	step := func(title string, fn func() (string, error)) error {
		n++
		t := time.Now()
		fmt.Fprintf(e.stdout, "\n%d. %s\n", n, title)
		result, err := fn()
		if err != nil {
			return fmt.Errorf("demo step %d (%s): %w", n, title, err)
		}
		fmt.Fprintf(e.stdout, "   %s  [%s]\n", result, time.Since(t).Round(time.Millisecond))
		return nil
	}
	everywhere := []gosync.CheckpointDeclaration{{AllPartitions: true, Name: todos.Projection, SchemaVersion: 2}}
	v2 := gosync.Server{SchemaVersion: 2, Declared: everywhere}
	names := make([]string, partitions)
	for i := range names {
		names[i] = fmt.Sprintf("p%d", i+1)
	}
	perPartition := max(commits/partitions, 1)

	if err := step("Migrate the sync log (goose, embedded migrations)", func() (string, error) {
		v, err := gosync.Migrate(ctx, pool, gosync.WithVersionTable(e.versionTable))
		return fmt.Sprintf("database at migration %d", v), err
	}); err != nil {
		return err
	}
	if err := step("A v1 server starts: schema v1 (todos: id, title)", func() (string, error) {
		err := s.EnsureReady(ctx, gosync.ReadyConfig{Schema: todos.Schema(1), Options: todos.SchemaChange(1)})
		return "schema marker at v1", err
	}); err != nil {
		return err
	}
	if err := step(fmt.Sprintf("The v1 fleet writes %d commits to each of %d partitions (p1 ... p%d)", perPartition, partitions, partitions), func() (string, error) {
		err := todos.SeedPartitions(ctx, pool, names, perPartition, max(perPartition/5, 1), 1)
		return fmt.Sprintf("%d commits written at writer_version 1", perPartition*partitions), err
	}); err != nil {
		return err
	}

	// An old v1 binary that knows nothing of the gate keeps appending.
	oldWriterCtx, stopOldWriter := context.WithCancel(ctx)
	defer stopOldWriter()
	fenced := make(chan error, 1)
	var oldWrites atomic.Int64
	go func() {
		for i := 0; ; i++ {
			v1 := int64(1)
			_, err := todos.OldWriterCommit(oldWriterCtx, pool, "p1", fmt.Sprintf("old-%d", i), &v1)
			if err != nil {
				fenced <- err
				return
			}
			oldWrites.Add(1)
			time.Sleep(5 * time.Millisecond)
		}
	}()

	if err := step("An old v1 binary keeps appending commits to p1 (raw INSERTs, no gate)", func() (string, error) {
		for oldWrites.Load() < 5 {
			select {
			case err := <-fenced:
				return "", err
			case <-time.After(5 * time.Millisecond):
			}
		}
		return fmt.Sprintf("%d commits so far, writer_version 1", oldWrites.Load()), nil
	}); err != nil {
		return err
	}
	if err := step(fmt.Sprintf("A v2 server starts: the schema bump to v2 declares the todos_by_owner backfill in all %d partitions", partitions), func() (string, error) {
		err := s.EnsureReady(ctx, gosync.ReadyConfig{Schema: todos.Schema(2), Options: todos.SchemaChange(2), Declarations: everywhere})
		return fmt.Sprintf("one transaction: migration lock, ALTER TABLE todos, marker v2, %d checkpoints + writer fences >= 2 in one set-based call", partitions), err
	}); err != nil {
		return err
	}
	if err := step("The v1 writer is fenced out by the database trigger", func() (string, error) {
		select {
		case err := <-fenced:
			var pg *pgconn.PgError
			if !errors.As(err, &pg) {
				return "", err
			}
			return fmt.Sprintf("after %d writes: ERROR %s (DETAIL: %s)", oldWrites.Load(), pg.Message, pg.Detail), nil
		case <-time.After(30 * time.Second):
			return "", errors.New("the old writer was not fenced")
		}
	}); err != nil {
		return err
	}

	activated := make(chan error, 1)
	if err := step("The v2 gate refuses p1 while todos_by_owner is backfilling", func() (string, error) {
		_, err := s.Push(ctx, "p1", demoCommit("v2-early"), v2)
		var nr *gosync.NotReadyError
		if !errors.As(err, &nr) {
			return "", fmt.Errorf("push was not refused: %v", err)
		}
		go func() { activated <- gosync.WaitActivated(ctx, pool, "p1", todos.Projection, 5*time.Second) }()
		return fmt.Sprintf("push refused: %v %v; a server now waits for the activation notice", err, nr.Details()), nil
	}); err != nil {
		return err
	}
	if err := step(fmt.Sprintf("The gate costs the same with %d checkpoints pending (sync_serve_check, index-driven)", partitions), func() (string, error) {
		const calls = 200
		t := time.Now()
		for i := 0; i < calls; i++ {
			if _, err := s.ServeCheck(ctx, names[i%partitions], v2); err != nil {
				return "", err
			}
		}
		return fmt.Sprintf("%d gate checks, %s each on average (one round trip)", calls, (time.Since(t) / calls).Round(time.Microsecond)), nil
	}); err != nil {
		return err
	}
	if err := step("Status: the summary a DBA reads (sync_barrier_summary)", func() (string, error) {
		return demoSummary(ctx, s)
	}); err != nil {
		return err
	}
	if err := step(fmt.Sprintf("The fleet backfill fills todos_by_owner in every partition with %d workers and activates each", workers), func() (string, error) {
		res, err := s.RunBackfills(ctx, gosync.Fleet{Backfill: gosync.Backfill{Name: todos.Projection, SchemaVersion: 2,
			Sources: []string{todos.Source}, ApplyRange: todos.ApplyRange,
			Knobs: gosync.NewBackfillKnobs(gosync.BackfillSettings{BatchSize: 2000})}, Workers: workers,
			Report: func(p gosync.FleetProgress) {
				fmt.Fprintf(e.stdout, "   ... %d/%d partitions activated, %.0f changes/s\n", p.PartitionsDone, p.Total, p.ChangesPerSecond)
			}})
		var watermark int64
		for _, cp := range res.Activated {
			if cp.Partition == "p1" {
				watermark = cp.Watermark
			}
		}
		return fmt.Sprintf("%d partitions activated (p1 activated at watermark %d), %d changes", len(res.Activated), watermark, res.Changes), err
	}); err != nil {
		return err
	}
	if err := step("The gate opens: the waiting server is woken by the activation", func() (string, error) {
		select {
		case err := <-activated:
			return "woken by NOTIFY sync_checkpoint_activated", err
		case <-time.After(30 * time.Second):
			return "", errors.New("no activation notice")
		}
	}); err != nil {
		return err
	}
	if err := step("Status: every checkpoint activated, lag 0", func() (string, error) {
		return demoSummary(ctx, s)
	}); err != nil {
		return err
	}
	return step("A v2 push and an authoritative read succeed", func() (string, error) {
		res, err := s.Push(ctx, "p1", demoCommit("v2-first"), v2)
		if err != nil {
			return "", err
		}
		var owned int64
		cursor, err := s.ReadAuthoritative(ctx, "p1", v2, func(ctx context.Context, tx pgx.Tx) error {
			return tx.QueryRow(ctx, "SELECT count(*) FROM todos_by_owner WHERE partition = 'p1'").Scan(&owned)
		})
		return fmt.Sprintf("push landed at seq %d; read: p1's todos_by_owner holds %d todos, cursor %d. Done in %s.",
			res.CommitSeq, owned, cursor, time.Since(started).Round(time.Millisecond)), err
	})
}

func demoCommit(id string) gosync.Commit {
	return gosync.Commit{ClientID: "v2-client", ClientCommitID: id, ActorID: "u1", CreatedAtMs: time.Now().UnixMilli(),
		Changes: []gosync.Change{{Table: todos.Source, RowID: "t-" + id, Op: gosync.OpUpsert,
			Scopes: map[string][]string{"owner": {"u1"}}, Payload: []byte(`{"title":"written by v2","owner":"u1"}`)}}}
}

// demoSummary is sync_barrier_summary in one line per row.
func demoSummary(ctx context.Context, s *gosync.Store) (string, error) {
	rows, err := s.BarrierSummary(ctx)
	var lines []string
	for _, r := range rows {
		lines = append(lines, fmt.Sprintf("v%d %s %s: %d partitions, max lag %d (%s)", r.SchemaVersion, r.Checkpoint, r.State, r.Partitions, r.MaxLag, r.SlowestPartition))
	}
	return strings.Join(lines, "; "), err
}
