package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gosync/gosync/examples/todos"
	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// processPool is one "process": its own pool, recognizable by its
// application_name so the test can kill its backends.
func processPool(t *testing.T, d *pgtest.DB, name string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = name
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TestFleetBackfillSurvivesAKilledProcess: three processes run RunBackfills
// on the same projection at once, two workers each, over 30 partitions.
// One is killed mid-run — its backends terminated (pg_terminate_backend)
// and its work abandoned — while it owns partitions. The other two pick
// those up once their lease runs out. In the end every checkpoint is
// activated, each by exactly one worker, and every partition's projection
// equals a rebuild from the log.
func TestFleetBackfillSurvivesAKilledProcess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _, partitions := fleetDB(t, 30, 300)
	fleet := func(pause time.Duration) gosync.Fleet {
		return gosync.Fleet{Backfill: gosync.Backfill{Name: todos.Projection, SchemaVersion: 2, Sources: []string{todos.Source},
			ApplyRange: todos.ApplyRange, Knobs: gosync.NewBackfillKnobs(gosync.BackfillSettings{BatchSize: 40, Pause: pause})},
			Workers: 2, Lease: 1500 * time.Millisecond, Poll: 100 * time.Millisecond}
	}

	activations := listenActivations(t, d)
	victimCtx, kill := context.WithCancel(ctx)
	defer kill()
	victim := processPool(t, d, "fleet-victim")
	var victimRes gosync.FleetResult
	victimDone := make(chan error, 1)
	go func() {
		var err error
		// Slow batches: a partition takes ≈ 0.6 s, so the kill lands mid-fill.
		victimRes, err = gosync.New(victim).RunBackfills(victimCtx, fleet(80*time.Millisecond))
		victimDone <- err
	}()
	// Kill it once it has activated a partition and owns another mid-fill
	// with at least three batches (≈ 240 ms) still to go, so the kill lands
	// before that partition can finish.
	for deadline := time.Now().Add(20 * time.Second); ; {
		var owned, activated int
		if err := d.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE c.state = 'backfilling' AND c.watermark > 0
			                                          AND c.watermark <= p.max_commit_seq - 120),
			count(*) FILTER (WHERE c.state = 'activated')
			FROM sync_backfill_checkpoints c JOIN sync_partitions p USING (partition)`).Scan(&owned, &activated); err != nil {
			t.Fatal(err)
		}
		if owned >= 1 && activated >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the victim never got mid-fill")
		}
		time.Sleep(5 * time.Millisecond)
	}
	var killed int
	if err := d.Pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = 'fleet-victim') k`).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	kill()
	if err := <-victimDone; err == nil {
		t.Fatal("the killed process finished without an error")
	}
	orphaned := queryOne[int](t, d.Pool, `SELECT count(*) FROM sync_backfill_checkpoints WHERE state = 'backfilling'`)
	t.Logf("killed %d backends; the victim activated %d partitions and left %d backfilling", killed, len(victimRes.Activated), orphaned)
	if orphaned == 0 {
		t.Fatal("the victim left no partition mid-fill: the test proves nothing")
	}

	var wg sync.WaitGroup
	results := make([]gosync.FleetResult, 2)
	errs := make([]error, 2)
	for i := range results {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			pool := processPool(t, d, fmt.Sprintf("fleet-%d", i))
			results[i], errs[i] = gosync.New(pool).RunBackfills(ctx, fleet(10*time.Millisecond))
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("process %d: %v", i, err)
		}
	}

	// Counted from the activations' NOTIFYs (sent on commit): the victim
	// may have committed an activation it never got to report.
	activatedBy := activations()
	reported := map[string]int{}
	for _, res := range append(results, victimRes) {
		for _, cp := range res.Activated {
			if reported[cp.Partition]++; reported[cp.Partition] > 1 {
				t.Errorf("partition %s reported activated by two workers", cp.Partition)
			}
		}
	}
	for _, p := range partitions {
		if activatedBy[p] != 1 {
			t.Errorf("partition %s activated %d times, want exactly once", p, activatedBy[p])
		}
		if diff := projectionDiffIn(t, d, p, -1); diff != "" {
			t.Errorf("partition %s: projection differs from a rebuild: %s", p, diff)
		}
	}
	if pending := queryOne[int](t, d.Pool, `SELECT count(*) FROM sync_backfill_checkpoints WHERE state <> 'activated'`); pending != 0 {
		t.Fatalf("%d checkpoints not activated", pending)
	}
	t.Logf("survivors: %d and %d partitions activated, %d and %d taken over by a peer",
		len(results[0].Activated), len(results[1].Activated), results[0].Lost, results[1].Lost)
}

// listenActivations collects the NOTIFYs of every activation committed from
// now on; the returned function waits for the stream to go quiet and counts
// them per partition.
func listenActivations(t *testing.T, d *pgtest.DB) func() map[string]int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := pgx.Connect(ctx, d.URL)
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, conn, "LISTEN "+gosync.ActivationChannel)
	var mu sync.Mutex
	counts := map[string]int{}
	last := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				return
			}
			var ref gosync.CheckpointRef
			if json.Unmarshal([]byte(n.Payload), &ref) == nil {
				mu.Lock()
				counts[ref.Partition]++
				last = time.Now()
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done; conn.Close(context.Background()) })
	return func() map[string]int {
		for {
			mu.Lock()
			quiet := time.Since(last) > 500*time.Millisecond
			mu.Unlock()
			if quiet {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		mu.Lock()
		defer mu.Unlock()
		out := map[string]int{}
		for k, v := range counts {
			out[k] = v
		}
		return out
	}
}

// TestFleetBackfillReports: one aggregate report at least at the end, with
// the partition counts of the database and this process's changes.
func TestFleetBackfillReports(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, s, partitions := fleetDB(t, 5, 100)
	var last gosync.FleetProgress
	res, err := s.RunBackfills(ctx, gosync.Fleet{Backfill: gosync.Backfill{Name: todos.Projection, SchemaVersion: 2,
		Sources: []string{todos.Source}, ApplyRange: todos.ApplyRange}, Workers: 3,
		Report: func(p gosync.FleetProgress) { last = p }})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Activated) != len(partitions) || res.Changes != int64(100*len(partitions)) {
		t.Fatalf("result = %d activated, %d changes", len(res.Activated), res.Changes)
	}
	if last.PartitionsDone != 5 || last.Total != 5 || last.ChangesDone != 500 || last.ETA != 0 {
		t.Fatalf("final report = %+v", last)
	}
	// Nothing left: a second run ends at once.
	if again, err := s.RunBackfills(ctx, gosync.Fleet{Backfill: gosync.Backfill{Name: todos.Projection, SchemaVersion: 2,
		Sources: []string{todos.Source}, ApplyRange: todos.ApplyRange}}); err != nil || len(again.Activated) != 0 {
		t.Fatalf("second run = %+v, %v", again, err)
	}
	if _, err := s.RunBackfills(ctx, gosync.Fleet{Backfill: gosync.Backfill{Name: todos.Projection, SchemaVersion: 2}}); !errors.Is(err, gosync.ErrInvalidArgument) {
		t.Fatalf("a fleet with no apply: %v, want ErrInvalidArgument", err)
	}
	if _, err := s.RunBackfills(ctx, gosync.Fleet{Backfill: gosync.Backfill{Name: "nowhere", SchemaVersion: 2,
		ApplyRange: todos.ApplyRange}}); !errors.Is(err, gosync.ErrCheckpointNotDeclared) {
		t.Fatalf("a fleet for a projection declared nowhere: %v, want ErrCheckpointNotDeclared", err)
	}
}

// TestClaimNextNeverCollides: 12 connections claim at once from 8 declared
// checkpoints: 8 claims, 8 distinct partitions, each at epoch 1, and 4 find
// nothing. Once the owners stop advancing for the lease, a claim takes a
// checkpoint over with a new epoch.
func TestClaimNextNeverCollides(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	mustExec(t, d.Pool, `SELECT sync_install_checkpoints(array_agg('c' || i), array_agg('proj'::text), 2)
		FROM generate_series(0, 7) i`)
	const claimers = 12
	conns := make([]*pgx.Conn, claimers)
	for i := range conns {
		c, err := pgx.Connect(ctx, d.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		conns[i] = c
	}
	start := make(chan struct{})
	got := make([]string, claimers)
	epochs := make([]int64, claimers)
	errs := make([]error, claimers)
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Add(1)
		go func(i int, c *pgx.Conn) {
			defer wg.Done()
			<-start
			err := c.QueryRow(ctx, `SELECT partition, owner_epoch FROM sync_claim_next_checkpoint('proj', 2, 60000)`).Scan(&got[i], &epochs[i])
			if !errors.Is(err, pgx.ErrNoRows) {
				errs[i] = err
			}
		}(i, c)
	}
	close(start)
	wg.Wait()
	seen := map[string]bool{}
	for i := range got {
		if errs[i] != nil {
			t.Fatalf("claimer %d: %v", i, errs[i])
		}
		if got[i] == "" {
			continue
		}
		if seen[got[i]] || epochs[i] != 1 {
			t.Fatalf("claimer %d got %s at epoch %d: claims collided (%v)", i, got[i], epochs[i], got)
		}
		seen[got[i]] = true
	}
	if len(seen) != 8 {
		t.Fatalf("%d distinct claims, want 8 (%v)", len(seen), got)
	}
	var p string
	var epoch int64
	if err := d.Pool.QueryRow(ctx, `SELECT partition, owner_epoch FROM sync_claim_next_checkpoint('proj', 2, 60000)`).Scan(&p, &epoch); !errors.Is(err, pgx.ErrNoRows) {
		t.Fatalf("within the lease: claimed %s at epoch %d, %v; want nothing", p, epoch, err)
	}
	// The lease runs on the database clock: the owners' last stamps moved
	// 61 s into the past (as the superuser) are owners that stopped 61 s ago.
	mustExec(t, d.Pool, `UPDATE sync_backfill_checkpoints SET updated_at_ms = updated_at_ms - 61000`)
	if err := d.Pool.QueryRow(ctx, `SELECT partition, owner_epoch FROM sync_claim_next_checkpoint('proj', 2, 60000)`).Scan(&p, &epoch); err != nil || p != "c0" || epoch != 2 {
		t.Fatalf("after the lease: claimed %s at epoch %d, %v; want c0 at epoch 2", p, epoch, err)
	}
}
