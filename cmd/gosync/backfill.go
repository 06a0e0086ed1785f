package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/todos"
)

func runBackfill(e env, args []string) error {
	fs := flags("backfill", e)
	partition := fs.String("partition", "p1", "partition to fill")
	version := fs.Int64("version", 0, "schema version to claim at (default: the stored schema version)")
	batch := fs.Int("batch", 1000, "commit seqs (log entries) per batch")
	pause := fs.Duration("pause", 0, "pause between batches")
	rate := fs.Float64("rate", 0, "at most this many source changes per second (0: no limit)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *batch < 1 || *rate < 0 || *pause < 0 {
		return usagef("backfill: --batch must be >= 1, --rate and --pause >= 0")
	}
	return e.withPool(func(pool *pgxpool.Pool) error {
		s := gosync.New(pool)
		if err := requirePartition(e, s, *partition); err != nil {
			return err
		}
		v := *version
		if v == 0 {
			if err := pool.QueryRow(e.ctx, "SELECT coalesce((SELECT schema_version FROM sync_schema_meta WHERE id = 1), 0)").Scan(&v); err != nil {
				return err
			}
		}
		if _, err := pool.Exec(e.ctx, todos.ProjectionDDL); err != nil {
			return err
		}
		cp, err := backfillTodos(e, s, *partition, v, gosync.BackfillSettings{BatchSize: *batch, Pause: *pause, RowsPerS: *rate})
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "activated %s/%s at watermark %d (%d rows, owner epoch %d)\n", cp.Partition, cp.Name, cp.Watermark, cp.ObservedRows, cp.OwnerEpoch)
		return nil
	})
}

// backfillTodos fills the example projection, reporting progress to stdout.
func backfillTodos(e env, s *gosync.Store, partition string, version int64, settings gosync.BackfillSettings) (gosync.Checkpoint, error) {
	progress := newProgressPrinter(e.stdout)
	cp, err := s.RunBackfill(e.ctx, gosync.Backfill{
		Partition: partition, Name: todos.Projection, SchemaVersion: version,
		Sources: []string{todos.Source}, Apply: todos.Apply,
		Knobs: gosync.NewBackfillKnobs(settings), Progress: progress.report,
	})
	progress.done()
	if errors.Is(err, gosync.ErrCheckpointNotDeclared) {
		return cp, fmt.Errorf("%w (declare it with `gosync checkpoint declare --partition %s --name %s --version N`)", err, partition, todos.Projection)
	}
	return cp, err
}

// progressPrinter draws a progress bar on a terminal and prints plain log
// lines (at most one a second) otherwise.
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

func (p *progressPrinter) print(pr gosync.Progress) {
	pct := 100.0
	if pr.CoverageSeq > 0 {
		pct = 100 * float64(pr.Watermark) / float64(pr.CoverageSeq)
	}
	eta := "-"
	if pr.ETA > 0 {
		eta = pr.ETA.Round(100 * time.Millisecond).String()
	}
	line := fmt.Sprintf("%5.1f%%  %d rows  %.0f rows/s  watermark %d of %d  ETA %s", pct, pr.RowsDone, pr.RowsPerSecond, pr.Watermark, pr.CoverageSeq, eta)
	if p.tty {
		const width = 30
		filled := int(pct / 100 * width)
		fmt.Fprintf(p.w, "\r[%s%s] %s\x1b[K", strings.Repeat("#", filled), strings.Repeat("-", width-filled), line)
		return
	}
	fmt.Fprintf(p.w, "backfill %s/%s: %s\n", pr.Partition, pr.Name, line)
}

func (p *progressPrinter) done() {
	if p.pending != nil {
		p.print(*p.pending)
	}
	if p.tty {
		fmt.Fprintln(p.w)
	}
}
