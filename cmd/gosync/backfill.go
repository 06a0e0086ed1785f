package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/gosync/gosync/examples/todos"
	"github.com/gosync/gosync/gosync"
)

func backfillCmd(e *env) *cobra.Command {
	var o backfillOptions
	c := &cobra.Command{Use: "backfill", Args: cobra.NoArgs,
		Short: "fill a projection in one partition (--partition) or in every one that declares it (--all)",
		Long: `Fill a projection and activate its checkpoint: a projection of your own
(--name, --sources, --apply file.sql: the batch apply as one SQL statement,
$1 partition, $2 after seq, $3 through seq, $4 sources), or the example
application's (--example todos: todos_by_owner, whose table it creates when
missing). Ctrl-C stops after the current batch; re-running resumes.`,
		RunE: func(*cobra.Command, []string) error { return runBackfill(e, o) }}
	f := c.Flags()
	f.StringVar(&o.partition, "partition", "", "partition to fill (required without --all)")
	f.BoolVar(&o.all, "all", false, "fill every partition that declares the projection (a fleet of --workers)")
	f.IntVar(&o.workers, "workers", 1, "with --all: partitions filled at once by this process")
	f.DurationVar(&o.lease, "lease", 30*time.Second, "with --all: take over a checkpoint whose owner made no progress for this long")
	f.StringVar(&o.name, "name", "", "with --apply: the projection (checkpoint name)")
	f.StringVar(&o.example, "example", "", "instead of --apply: the example application's projection (todos: "+todos.Projection+", its table created when missing)")
	f.StringVar(&o.sources, "sources", "", "with --apply: the projection's source tables, comma-separated")
	f.StringVar(&o.apply, "apply", "", "a file holding one SQL statement that applies a batch")
	f.Int64Var(&o.version, "version", 0, "schema version to claim at (default: the stored schema version)")
	f.IntVar(&o.batch, "batch", 1000, "commit seqs (log entries) per batch")
	f.DurationVar(&o.pause, "pause", 0, "pause between batches")
	f.Float64Var(&o.rate, "rate", 0, "at most this many source changes per second (0: no limit)")
	return c
}

type backfillOptions struct {
	partition, name, sources, apply string
	example                         string
	all                             bool
	workers, batch                  int
	lease, pause                    time.Duration
	version                         int64
	rate                            float64
}

func runBackfill(e *env, o backfillOptions) error {
	if o.batch < 1 || o.rate < 0 || o.pause < 0 || o.workers < 1 || o.lease <= 0 {
		return usagef("backfill: --batch and --workers must be >= 1, --rate and --pause >= 0, --lease > 0")
	}
	if o.all == (o.partition != "") {
		return usagef("backfill: give --partition P or --all")
	}
	// The example's projection is only ever filled on request: creating
	// todos_by_owner in whatever database the command points at is not a
	// default.
	custom := o.apply != ""
	switch {
	case o.example != "" && o.example != "todos":
		return usagef("backfill: --example %q: the one example is todos", o.example)
	case custom == (o.example != ""):
		return usagef("backfill: give --apply file.sql --sources T --name N (a projection of your own) or --example todos")
	case custom && (o.sources == "" || o.name == ""):
		return usagef("backfill: --apply file.sql needs --sources and --name")
	case !custom && (o.sources != "" || o.name != ""):
		return usagef("backfill: --example todos fills %s: --name and --sources go with --apply", todos.Projection)
	}
	if !custom {
		o.name = todos.Projection
	}
	b := gosync.Backfill{Name: o.name,
		Knobs: gosync.NewBackfillKnobs(gosync.BackfillSettings{BatchSize: o.batch, Pause: o.pause, RowsPerS: o.rate})}
	if custom {
		text, err := os.ReadFile(o.apply)
		if err != nil {
			return usagef("backfill: --apply: %v", err)
		}
		b.Sources = strings.Split(o.sources, ",")
		if b.ApplyRange, err = gosync.ApplyRangeSQL(string(text), b.Sources); err != nil {
			return usagef("backfill: --apply %s: %v", o.apply, err)
		}
	} else {
		b.Sources, b.ApplyRange = []string{todos.Source}, todos.ApplyRange
	}
	return e.withPool(func(pool *pgxpool.Pool) error {
		s := gosync.New(pool)
		b.SchemaVersion = o.version
		if b.SchemaVersion == 0 {
			v, err := s.SchemaVersion(e.ctx)
			if err != nil {
				return err
			}
			b.SchemaVersion = v
			if b.SchemaVersion == 0 {
				return fmt.Errorf("no schema marker: pass --version N (the schema version the checkpoint was declared at)")
			}
		}
		if o.all {
			return withProjection(e, pool, !custom, func() error { return backfillFleet(e, s, b, o.workers, o.lease) })
		}
		if err := requirePartition(e, s, o.partition); err != nil {
			return err
		}
		b.Partition = o.partition
		cp, err := s.Checkpoint(e.ctx, b.Partition, b.Name)
		if errors.Is(err, gosync.ErrCheckpointNotDeclared) || err == nil && cp.SchemaVersion != b.SchemaVersion {
			return fmt.Errorf("%w: no checkpoint %s at schema version %d in partition %s (declare it with `gosync checkpoint declare --partition %s --name %s --version %d`, or pass --version)",
				gosync.ErrCheckpointNotDeclared, printable(b.Name), b.SchemaVersion, printable(b.Partition), printable(b.Partition), printable(b.Name), b.SchemaVersion)
		}
		if err != nil {
			return err
		}
		if cp.State == gosync.StateActivated {
			fmt.Fprintf(e.stdout, "%s/%s already activated at watermark %d (%d rows): nothing to do\n", printable(cp.Partition), printable(cp.Name), cp.Watermark, cp.ObservedRows)
			return nil
		}
		return withProjection(e, pool, !custom, func() error {
			cp, err := backfillOne(e, s, b)
			if errors.Is(err, gosync.ErrBackfillStopped) {
				return fmt.Errorf("interrupted: %s/%s stopped after its batch at watermark %d (%d rows); re-running the same command resumes from there",
					printable(cp.Partition), printable(cp.Name), cp.Watermark, cp.ObservedRows)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "activated %s/%s at watermark %d (%d rows, owner epoch %d)\n", printable(cp.Partition), printable(cp.Name), cp.Watermark, cp.ObservedRows, cp.OwnerEpoch)
			return nil
		})
	})
}

// withProjection runs fill with the example's projection table in place
// (create is false for a projection of the operator's own). A table it
// creates is dropped again when fill fails before any batch committed, so
// a failed first run leaves nothing behind; a table that exists is not
// touched (a sync_backfill login may fill it without CREATE rights).
func withProjection(e *env, pool *pgxpool.Pool, create bool, fill func() error) error {
	if !create {
		return fill()
	}
	var exists bool
	if err := pool.QueryRow(e.ctx, "SELECT to_regclass('todos_by_owner') IS NOT NULL").Scan(&exists); err != nil {
		return err
	}
	if exists {
		return fill()
	}
	if _, err := pool.Exec(e.ctx, todos.ProjectionDDL); err != nil {
		return err
	}
	err := fill()
	if err == nil {
		return nil
	}
	// Nothing committed: no checkpoint of the projection has a watermark.
	var filled bool
	if qerr := pool.QueryRow(context.WithoutCancel(e.ctx), "SELECT EXISTS (SELECT FROM todos_by_owner)").Scan(&filled); qerr == nil && !filled {
		_, _ = pool.Exec(context.WithoutCancel(e.ctx), "DROP TABLE todos_by_owner")
	}
	return err
}

// backfillFleet fills b's projection in every partition, printing one
// aggregate progress line at most once a second.
func backfillFleet(e *env, s *gosync.Store, b gosync.Backfill, workers int, lease time.Duration) error {
	// Ctrl-C (e.ctx done) stops every worker after its current batch.
	b.Stop = e.ctx.Done()
	res, err := s.RunBackfills(context.WithoutCancel(e.ctx), gosync.Fleet{Backfill: b, Workers: workers, Lease: lease, Report: func(p gosync.FleetProgress) {
		eta := "-"
		if p.ETA > 0 {
			eta = p.ETA.Round(100 * time.Millisecond).String()
		}
		fmt.Fprintf(e.stdout, "backfill %s: %d/%d partitions activated, %d working here, %d changes, %.0f changes/s, ETA %s\n",
			p.Name, p.PartitionsDone, p.Total, p.Working, p.ChangesDone, p.ChangesPerSecond, eta)
	}})
	if errors.Is(err, gosync.ErrCheckpointNotDeclared) {
		err = fmt.Errorf("%w (declare it with `gosync checkpoint declare`, or pass --version)", err)
	}
	if errors.Is(err, gosync.ErrBackfillStopped) {
		return fmt.Errorf("interrupted: the workers stopped after their current batches (%d partitions activated by this process); re-running the same command resumes", len(res.Activated))
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "done: %d partitions activated by this process, %d taken over by other workers, %d changes\n",
		len(res.Activated), res.Lost, res.Changes)
	return nil
}

// backfillOne fills b's projection in b.Partition, reporting progress to
// stdout. Ctrl-C (e.ctx done) stops it after the current batch, which
// commits: the run's own queries use a context the signal does not cancel.
func backfillOne(e *env, s *gosync.Store, b gosync.Backfill) (gosync.Checkpoint, error) {
	progress := newProgressPrinter(e.stdout)
	b.Progress = progress.report
	b.Stop = e.ctx.Done()
	cp, err := s.RunBackfill(context.WithoutCancel(e.ctx), b)
	progress.done()
	return cp, err
}

// progressPrinter redraws one line in place (\r) on a terminal and prints
// plain log lines, at most one a second, otherwise.
type progressPrinter struct {
	w       io.Writer
	tty     bool
	last    time.Time
	pending *gosync.Progress
}

func newProgressPrinter(w io.Writer) *progressPrinter {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &progressPrinter{w: w, tty: tty}
}

func (p *progressPrinter) report(pr gosync.Progress) {
	p.pending = &pr
	if time.Since(p.last) < time.Second && !p.tty {
		return
	}
	p.last = time.Now()
	p.print(pr)
	p.pending = nil
}

// progressWidth is the terminal line: 79 columns, so an 80-column terminal
// never wraps it.
const progressWidth = 79

func (p *progressPrinter) print(pr gosync.Progress) {
	if p.tty {
		fmt.Fprintf(p.w, "\r%s\x1b[K", progressLine(pr, true))
		return
	}
	fmt.Fprintf(p.w, "backfill %s/%s: %s\n", printable(pr.Partition), printable(pr.Name), progressLine(pr, false))
}

// progressLine is the progress of pr: the percentage of the log covered
// (watermark / coverage seq), the rows applied by every run so far (the
// stored count, so a resumed run agrees with its percentage), this run's
// rate and the ETA; with bar, a bar in front, all within progressWidth.
func progressLine(pr gosync.Progress, bar bool) string {
	pct := 100.0
	if pr.CoverageSeq > 0 {
		pct = 100 * float64(pr.Watermark) / float64(pr.CoverageSeq)
	}
	eta := "-"
	if pr.ETA > 0 {
		eta = pr.ETA.Round(time.Second).String()
	}
	line := fmt.Sprintf("%5.1f%%  seq %d/%d  %d rows  %.0f rows/s  ETA %s", pct, pr.Watermark, pr.CoverageSeq, pr.ObservedRows, pr.RowsPerSecond, eta)
	if bar {
		width := max(progressWidth-len(line)-3, 0)
		filled := min(int(pct/100*float64(width)), width)
		line = "[" + strings.Repeat("#", filled) + strings.Repeat("-", width-filled) + "] " + line
	}
	if len(line) > progressWidth {
		line = line[:progressWidth]
	}
	return line
}

func (p *progressPrinter) done() {
	if p.pending != nil {
		p.print(*p.pending)
	}
	if p.tty {
		fmt.Fprintln(p.w)
	}
}
