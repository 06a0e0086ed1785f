package gosync

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Fleet is one projection to fill in every partition that declares it,
// by several workers — and by several processes running RunBackfills at
// once: each claim takes a checkpoint no live worker owns
// (sync_claim_next_checkpoint, FOR UPDATE SKIP LOCKED).
type Fleet struct {
	// Backfill is every partition's fill: Name, SchemaVersion, Sources,
	// Apply or ApplyRange, Initial, Knobs and Stop (shared by every worker:
	// closing Stop ends each after its current batch, and RunBackfills
	// returns ErrBackfillStopped). Its Partition and Progress are ignored.
	Backfill
	Workers int // concurrent partitions in this process; default 1
	// Lease is how long a claimed checkpoint may go without progress before
	// another worker takes it over (its owner crashed). Every batch renews
	// it, so it must exceed the longest batch. Default 30s; 1 s to 24 h
	// (sync_claim_next_checkpoint refuses others: ErrInvalidArgument).
	// Measured on the database clock.
	Lease time.Duration
	// Poll is how often an idle worker looks again for claimable work while
	// other workers' partitions are unfinished. Default Lease/10.
	Poll   time.Duration
	Report func(FleetProgress) // optional; at most once a second, and at the end
}

// FleetProgress is the aggregate progress of a fleet backfill: partitions
// from the database (all processes), changes from this process.
type FleetProgress struct {
	Name                      string
	PartitionsDone, Total     int64 // activated checkpoints / all checkpoints of the projection
	Working                   int   // partitions this process is filling now
	ChangesDone               int64 // source changes applied by this process
	ChangesPerSecond          float64
	PartitionsPerSecond       float64       // activated by this process
	ETA                       time.Duration // 0 when unknown or done
	ActivatedHere, LostToPeer int           // by this process: activated, and taken over by another worker
}

// FleetResult is what RunBackfills did in this process.
type FleetResult struct {
	Activated []Checkpoint // activated by this process
	Lost      int          // partitions another worker took over (their batches rolled back)
	Changes   int64        // source changes applied by this process
}

// RunBackfills fills the projection in every partition: each of f.Workers
// workers claims a checkpoint no live worker owns, fills and activates it
// (RunBackfill's batches, resume from the stored watermark), then claims
// the next. A checkpoint whose owner stops advancing for f.Lease is claimed
// again (a crashed process's partitions are picked up). A partition lost to
// another worker is counted and skipped. Workers end when every checkpoint
// of the projection is activated; the first other error stops them all. A
// projection declared nowhere at the version is ErrCheckpointNotDeclared.
func (s *Store) RunBackfills(ctx context.Context, f Fleet) (FleetResult, error) {
	if s.pool == nil {
		return FleetResult{}, fmt.Errorf("%w: RunBackfills runs concurrent workers, each committing its claims", ErrNeedsPool)
	}
	if err := f.Backfill.validate(); err != nil {
		return FleetResult{}, err
	}
	version, err := int32Arg("schema_version", f.SchemaVersion)
	if err != nil {
		return FleetResult{}, err
	}
	total, _, err := s.checkpointCounts(ctx, s.conn, f.Name, version)
	if err != nil {
		return FleetResult{}, err
	}
	if total == 0 {
		return FleetResult{}, fmt.Errorf("%w: no checkpoint %q at schema version %d in any partition", ErrCheckpointNotDeclared, f.Name, version)
	}
	if err := s.assertSourceTables(ctx, s.conn, f.Sources); err != nil {
		return FleetResult{}, err
	}
	if f.Workers < 1 {
		f.Workers = 1
	}
	if f.Lease <= 0 {
		f.Lease = 30 * time.Second
	}
	if f.Poll <= 0 {
		f.Poll = f.Lease / 10
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	run := &fleetRun{s: s, f: f, version: version, started: time.Now()}
	errs := make(chan error, f.Workers)
	var wg sync.WaitGroup
	for w := 0; w < f.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run.worker(ctx); err != nil {
				errs <- err
				if !errors.Is(err, ErrBackfillStopped) {
					cancel() // stop the others now; a Stop lets them finish their batch
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	run.report(context.WithoutCancel(ctx), true)
	res := FleetResult{Activated: run.activated, Lost: int(run.lost.Load()), Changes: run.changes.Load()}
	if err := <-errs; err != nil {
		return res, err
	}
	return res, nil
}

type fleetRun struct {
	s       *Store
	f       Fleet
	version int32
	started time.Time

	changes, lost atomic.Int64
	working       atomic.Int32

	mu         sync.Mutex
	activated  []Checkpoint
	lastReport time.Time
	reporting  sync.Mutex // one Progress call at a time
}

func (r *fleetRun) worker(ctx context.Context) error {
	for {
		select {
		case <-r.f.Stop:
			return ErrBackfillStopped
		default:
		}
		cp, claimed, err := r.s.claimNextCheckpoint(ctx, r.s.conn, r.f.Name, r.version, r.f.Lease.Milliseconds())
		if err != nil {
			return err
		}
		if !claimed {
			total, activated, err := r.s.checkpointCounts(ctx, r.s.conn, r.f.Name, r.version)
			if err != nil {
				return err
			}
			if activated == total {
				return nil
			}
			// Others own the rest; one of them may crash and leave its lease.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-r.f.Stop:
				return ErrBackfillStopped
			case <-time.After(r.f.Poll):
			}
			continue
		}
		if err := r.fillOne(ctx, cp); err != nil {
			return err
		}
	}
}

func (r *fleetRun) fillOne(ctx context.Context, cp Checkpoint) error {
	r.working.Add(1)
	defer r.working.Add(-1)
	var seen int64
	b := r.f.Backfill
	b.Partition = cp.Partition
	b.Progress = func(p Progress) {
		r.changes.Add(p.RowsDone - seen)
		seen = p.RowsDone
		r.report(ctx, false)
	}
	done, err := r.s.fill(ctx, b, cp)
	switch {
	case errors.Is(err, ErrLostOwnership):
		r.lost.Add(1)
		return nil
	case err != nil:
		return fmt.Errorf("partition %q: %w", cp.Partition, err)
	}
	r.mu.Lock()
	r.activated = append(r.activated, done)
	r.mu.Unlock()
	r.report(ctx, false)
	return nil
}

// report calls f.Report at most once a second (always when final), one
// call at a time, with the partition counts read from the database: every
// process's work.
func (r *fleetRun) report(ctx context.Context, final bool) {
	if r.f.Report == nil {
		return
	}
	if final {
		r.reporting.Lock()
	} else if !r.reporting.TryLock() {
		return
	}
	defer r.reporting.Unlock()
	r.mu.Lock()
	if !final && time.Since(r.lastReport) < time.Second {
		r.mu.Unlock()
		return
	}
	r.lastReport = time.Now()
	activatedHere := len(r.activated)
	r.mu.Unlock()
	total, activated, err := r.s.checkpointCounts(ctx, r.s.conn, r.f.Name, r.version)
	if err != nil {
		return // progress is best effort; the work reports its own errors
	}
	p := FleetProgress{Name: r.f.Name, PartitionsDone: activated, Total: total, Working: int(r.working.Load()),
		ChangesDone: r.changes.Load(), ActivatedHere: activatedHere, LostToPeer: int(r.lost.Load())}
	if secs := time.Since(r.started).Seconds(); secs > 0 {
		p.ChangesPerSecond = float64(p.ChangesDone) / secs
		p.PartitionsPerSecond = float64(activatedHere) / secs
	}
	if left := p.Total - p.PartitionsDone; left > 0 && p.PartitionsPerSecond > 0 {
		p.ETA = time.Duration(float64(left) / p.PartitionsPerSecond * float64(time.Second))
	}
	r.f.Report(p)
}
