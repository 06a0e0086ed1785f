package gosync

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gosync/gosync/db"
)

// BackfillSettings are a backfill's knobs. Hand a *BackfillKnobs to the
// worker and Store new settings into it to retune a running backfill.
type BackfillSettings struct {
	BatchSize int           // log seqs (commits) per batch: a batch is a range of the log, never part of a commit; default 1000
	Pause     time.Duration // sleep between batches
	RowsPerS  float64       // at most this many source changes per second, on average since the rate was set; 0 = no limit
}

// BackfillKnobs holds settings the worker re-reads before every batch.
type BackfillKnobs struct {
	v atomic.Pointer[BackfillSettings]
}

// NewBackfillKnobs returns knobs holding s.
func NewBackfillKnobs(s BackfillSettings) *BackfillKnobs {
	k := &BackfillKnobs{}
	k.Store(s)
	return k
}

// Store replaces the settings; the worker uses them from its next batch.
func (k *BackfillKnobs) Store(s BackfillSettings) { k.v.Store(&s) }

// Load returns the current settings.
func (k *BackfillKnobs) Load() BackfillSettings {
	s := *k.v.Load()
	if s.BatchSize <= 0 {
		s.BatchSize = 1000
	}
	return s
}

// SourceChange is one change of a source table as Backfill.Apply reads it
// from the log: the Change as it was pushed (the same fields and types),
// and where it sits in the log.
type SourceChange struct {
	Partition string
	CommitSeq int64 // the commit it belongs to (a batch is in commit order)
	Index     int32 // its position within the commit
	Change
}

// sourceChange converts a log row. Scopes are stored as {"var": [values]};
// a row restored from elsewhere may hold {"var": "value"}, read as one value.
func sourceChange(r db.SyncChange) (SourceChange, error) {
	c := SourceChange{Partition: r.Partition, CommitSeq: r.CommitSeq, Index: r.Idx,
		Change: Change{Table: r.Tbl, RowID: r.RowID, Op: r.Op, RowVersion: r.RowVersion, Payload: r.Payload}}
	if len(r.Scopes) == 0 {
		return c, nil
	}
	if err := json.Unmarshal(r.Scopes, &c.Scopes); err == nil {
		return c, nil
	}
	var single map[string]string
	if err := json.Unmarshal(r.Scopes, &single); err != nil {
		return c, fmt.Errorf("gosync: change %d of commit %d: scopes %s: %w", r.Idx, r.CommitSeq, r.Scopes, err)
	}
	c.Scopes = make(map[string][]string, len(single))
	for k, v := range single {
		c.Scopes[k] = []string{v}
	}
	return c, nil
}

// Progress is reported after every batch.
type Progress struct {
	Partition, Name string
	Batches         int
	RowsDone        int64 // source changes applied by this worker
	ObservedRows    int64 // source changes applied by all owners so far (stored)
	Watermark       int64
	CoverageSeq     int64
	RowsPerSecond   float64
	ETA             time.Duration // 0 when unknown or done
}

// Backfill describes one projection to fill for one partition.
type Backfill struct {
	Partition     string
	Name          string // the checkpoint
	SchemaVersion int64
	Sources       []string
	// Apply writes the projection for a batch of source changes (in commit
	// order) inside tx; the watermark advances in the same transaction, so a
	// batch is applied exactly once or not at all.
	Apply func(ctx context.Context, tx pgx.Tx, batch []SourceChange) error
	// ApplyRange, instead of Apply, writes the projection for the source
	// changes with after < commit_seq <= through inside the database (one
	// INSERT ... SELECT from sync_changes, nothing fetched into Go) and
	// returns how many source changes it applied. Same transaction rules.
	ApplyRange func(ctx context.Context, tx pgx.Tx, partition string, after, through int64) (int64, error)
	// Initial, when set, fills the projection from the application's
	// current rows when the checkpoint has no watermark yet. It runs in a
	// REPEATABLE READ transaction whose cursor (max_commit_seq) becomes the
	// starting watermark, so it works on a log pruned past its beginning.
	// It returns the rows it wrote. It needs a Store from New (under
	// WithTx, ErrNeedsPool).
	Initial  func(ctx context.Context, tx pgx.Tx) (int64, error)
	Knobs    *BackfillKnobs // nil: defaults
	Progress func(Progress) // optional
	// Stop, when closed, ends the backfill after its current batch commits
	// (ctx's cancellation would roll that batch back instead): RunBackfill
	// returns the checkpoint as it stands and ErrBackfillStopped.
	Stop <-chan struct{}
}

// RunBackfill claims the checkpoint and fills the projection from the log:
// batches of source changes above the stored watermark, each applied and
// advanced in one transaction (a lost CAS rolls the batch back and returns
// ErrLostOwnership), then activation under the partition lock; `stale`
// means more batches. A crash at any point leaves projection and watermark
// consistent, and a new RunBackfill resumes from the stored watermark under
// a new epoch. It returns the activated checkpoint.
func (s *Store) RunBackfill(ctx context.Context, b Backfill) (Checkpoint, error) {
	if err := b.validate(); err != nil {
		return Checkpoint{}, err
	}
	version, err := int32Arg("schema_version", b.SchemaVersion)
	if err != nil {
		return Checkpoint{}, err
	}
	// Sources that are not tables of the stored schema are refused before
	// anything is claimed: activation would refuse them at the end, after
	// the claim and every batch.
	if err := s.assertSourceTables(ctx, s.conn, b.Sources); err != nil {
		return Checkpoint{}, err
	}
	cp, err := s.claimCheckpoint(ctx, s.conn, b.Partition, b.Name, version)
	if err != nil {
		return Checkpoint{}, err
	}
	return s.fill(ctx, b, cp)
}

func (b Backfill) validate() error {
	if (b.Apply == nil) == (b.ApplyRange == nil) {
		return fmt.Errorf("%w: a backfill needs exactly one of Apply and ApplyRange", ErrInvalidArgument)
	}
	return nil
}

// fill runs the batches and the activation of a checkpoint cp the caller
// has just claimed.
func (s *Store) fill(ctx context.Context, b Backfill, cp Checkpoint) (Checkpoint, error) {
	knobs := b.Knobs
	if knobs == nil {
		knobs = NewBackfillKnobs(BackfillSettings{})
	}
	var err error
	sources := b.Sources
	if sources == nil {
		sources = []string{}
	}
	epoch, watermark, observed := cp.OwnerEpoch, cp.Watermark, cp.ObservedRows
	if watermark == 0 && b.Initial != nil {
		if watermark, observed, err = s.initialFill(ctx, b, epoch); err != nil {
			return Checkpoint{}, err
		}
	}
	started := time.Now()
	pace := pacer{}
	var done int64
	// The coverage seq is re-read only once the watermark reaches it: one
	// round trip per batch saved, and activation re-checks coverage anyway.
	coverage, err := s.sourceCoverageSeq(ctx, s.conn, b.Partition, sources)
	if err != nil {
		return Checkpoint{}, err
	}
	for batches := 0; ; {
		if watermark >= coverage {
			if coverage, err = s.sourceCoverageSeq(ctx, s.conn, b.Partition, sources); err != nil {
				return Checkpoint{}, err
			}
		}
		if watermark >= coverage {
			switch r, err := s.activateCheckpoint(ctx, s.conn, CheckpointActivation{Partition: b.Partition, Name: b.Name, OwnerEpoch: epoch, Watermark: watermark, Sources: sources}); {
			case err != nil:
				return Checkpoint{}, err
			case r == ActivationActivated:
				return s.checkpoint(ctx, s.conn, b.Partition, b.Name)
			case r == ActivationUnverifiable:
				return Checkpoint{}, fmt.Errorf("%w (partition %q, checkpoint %q, watermark %d)", ErrLogPruned, b.Partition, b.Name, watermark)
			}
			// Stale: either new changes arrived (loop on) or the CAS lost.
			now, err := s.checkpoint(ctx, s.conn, b.Partition, b.Name)
			if err != nil {
				return Checkpoint{}, err
			}
			if now.OwnerEpoch != epoch {
				return Checkpoint{}, ErrLostOwnership
			}
			continue
		}
		settings := knobs.Load()
		end := min(watermark+int64(settings.BatchSize), coverage)
		pace.start(settings.RowsPerS, time.Now())
		n, err := s.backfillBatch(ctx, b, sources, epoch, watermark, end, observed)
		if err != nil {
			return Checkpoint{}, err
		}
		batches++
		watermark, observed, done = end, observed+n, done+n
		if b.Progress != nil {
			p := Progress{Partition: b.Partition, Name: b.Name, Batches: batches, RowsDone: done,
				ObservedRows: observed, Watermark: watermark, CoverageSeq: coverage}
			if secs := time.Since(started).Seconds(); secs > 0 {
				p.RowsPerSecond = float64(done) / secs
			}
			if p.RowsPerSecond > 0 && coverage > watermark && done > 0 {
				// Seqs left, scaled by the rows per seq seen so far.
				perSeq := float64(done) / float64(max(watermark-cp.Watermark, 1))
				p.ETA = time.Duration(float64(coverage-watermark) * perSeq / p.RowsPerSecond * float64(time.Second))
			}
			b.Progress(p)
		}
		wait := max(settings.Pause, pace.wait(n, time.Now()))
		if stopped, err := sleep(ctx, b.Stop, wait); err != nil || stopped {
			if stopped {
				stopped := Checkpoint{Partition: b.Partition, Name: b.Name, SchemaVersion: cp.SchemaVersion,
					State: StateBackfilling, Watermark: watermark, OwnerEpoch: epoch, ObservedRows: observed}
				return stopped, fmt.Errorf("%w at watermark %d of %d", ErrBackfillStopped, watermark, coverage)
			}
			return Checkpoint{}, err
		}
	}
}

// backfillBatch applies the source changes in (watermark, end] and advances
// the watermark to end, in one transaction; it returns the changes applied.
// Batches are ranges of commit seqs: no bound query, and an index range scan
// whatever the planner's statistics say about a freshly written log.
func (s *Store) backfillBatch(ctx context.Context, b Backfill, sources []string, epoch, watermark, end, observed int64) (int64, error) {
	var n int64
	err := pgx.BeginFunc(ctx, s.begin, func(tx pgx.Tx) error {
		// Take the checkpoint row first (a no-op CAS at the current
		// watermark): the batch writes the projection only as the verified
		// owner, and a competing claim waits for this batch to commit instead
		// of racing its projection writes (two workers inserting the same
		// projection row would otherwise fail on the key, not on the CAS).
		horizon, xid, err := s.ownBatch(ctx, tx, b, epoch, watermark, observed)
		if err != nil {
			return err
		}
		// Changes at or below the horizon are pruned: reading on from a
		// watermark below it would silently skip history.
		if horizon > watermark {
			return fmt.Errorf("%w (partition %q, checkpoint %q: watermark %d, horizon %d; fill from current rows with Backfill.Initial)",
				ErrLogPruned, b.Partition, b.Name, watermark, horizon)
		}
		if n, err = s.applyBatch(ctx, tx, b, sources, watermark, end); err != nil {
			return fmt.Errorf("gosync: backfill apply: %w", err)
		}
		// The advance reads the horizon again, after the read: a prune that
		// committed since the check above is sync.storage.log_pruned.
		return s.advanceBatch(ctx, tx, b, xid, epoch, end, observed+n)
	})
	return n, err
}

func (s *Store) applyBatch(ctx context.Context, tx pgx.Tx, b Backfill, sources []string, after, through int64) (int64, error) {
	if b.ApplyRange != nil {
		return b.ApplyRange(ctx, tx, b.Partition, after, through)
	}
	changes, err := s.sourceChanges(ctx, tx, b.Partition, sources, after, through)
	if err != nil {
		return 0, err
	}
	return int64(len(changes)), b.Apply(ctx, tx, changes)
}

// initialFill runs b.Initial in one snapshot and advances the watermark to
// that snapshot's cursor, in the same transaction.
func (s *Store) initialFill(ctx context.Context, b Backfill, epoch int64) (watermark, rows int64, err error) {
	if s.pool == nil {
		return 0, 0, fmt.Errorf("%w: an initial fill opens its own snapshot", ErrNeedsPool)
	}
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		_, xid, err := s.ownBatch(ctx, tx, b, epoch, 0, 0)
		if err != nil {
			return err
		}
		if watermark, err = s.currentCursor(ctx, tx, b.Partition); err != nil {
			return err
		}
		if rows, err = b.Initial(ctx, tx); err != nil {
			return fmt.Errorf("gosync: backfill initial fill: %w", err)
		}
		return s.advanceBatch(ctx, tx, b, xid, epoch, watermark, rows)
	})
	return watermark, rows, err
}

// pacer keeps a backfill at most at its rate limit: it sleeps until the
// rows applied since the limit was set would take rows/rate at that rate,
// so time spent applying counts towards the budget (sleeping rows/rate
// after each batch would add the batch's own time and undershoot).
type pacer struct {
	rate  float64
	since time.Time
	rows  int64
}

// start is called before each batch: a new rate restarts the budget.
func (p *pacer) start(rate float64, now time.Time) {
	if rate != p.rate || p.since.IsZero() {
		p.rate, p.since, p.rows = rate, now, 0
	}
}

// wait returns how long to sleep after a batch of n rows ending at now.
func (p *pacer) wait(n int64, now time.Time) time.Duration {
	p.rows += n
	if p.rate <= 0 {
		return 0
	}
	due := p.since.Add(time.Duration(float64(p.rows) / p.rate * float64(time.Second)))
	return max(due.Sub(now), 0)
}

// sleep waits d, or until stop is closed (true) or ctx is done (its error).
func sleep(ctx context.Context, stop <-chan struct{}, d time.Duration) (bool, error) {
	var timer <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	} else {
		select {
		case <-stop:
			return true, nil
		default:
		}
		return false, ctx.Err()
	}
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-stop:
		return true, nil
	case <-timer:
		return false, nil
	}
}
