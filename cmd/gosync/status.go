package main

import (
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/gosync/gosync/gosync"
)

func statusCmd(e *env) *cobra.Command {
	var partition, state string
	var limit int
	var asJSON bool
	c := &cobra.Command{Use: "status", Args: cobra.NoArgs,
		Short: "the barrier: a summary per version, projection and state, or the rows (fences, checkpoints, watermarks, lag)",
		RunE: func(*cobra.Command, []string) error {
			if limit < 0 {
				return usagef("status: --limit must be at least 0")
			}
			switch gosync.CheckpointState(state) {
			case "", gosync.StateDeclared, gosync.StateBackfilling, gosync.StateActivated:
			default:
				return usagef("status: --state %q is not declared, backfilling or activated", state)
			}
			f := &gosync.StatusFilter{Partition: partition, State: gosync.CheckpointState(state), Limit: limit}
			if partition == "" && state == "" && limit == 0 {
				f = nil // the summary: one line per projection, version and state, at any number of partitions
			}
			return e.withPool(func(pool *pgxpool.Pool) error { return printStatus(e, pool, f, asJSON) })
		}}
	c.Flags().StringVar(&partition, "partition", "", "list the rows of this partition")
	c.Flags().StringVar(&state, "state", "", "list the rows in this state (declared, backfilling, activated)")
	c.Flags().IntVar(&limit, "limit", 0, "list at most this many rows (0: all)")
	jsonFlag(c, &asJSON)
	return c
}

// requirePartition turns an unknown partition into a clear error.
func requirePartition(e *env, s *gosync.Store, partition string) error {
	if partition == "" {
		return nil
	}
	known, err := s.PartitionKnown(e.ctx, partition)
	if err != nil {
		return err
	}
	if !known {
		return fmt.Errorf("unknown partition %s (no log, registration, checkpoint or fence)", strconv.Quote(partition))
	}
	return nil
}

// printStatus prints the summary (f nil) or the rows f picks.
func printStatus(e *env, pool *pgxpool.Pool, f *gosync.StatusFilter, asJSON bool) error {
	p, err := gosync.NewMigrator(e.ctx, pool, gosync.WithVersionTable(e.versionTable))
	if err != nil {
		return err
	}
	defer p.Close()
	current, latest, err := p.GetVersions(e.ctx)
	if err != nil {
		return err
	}
	if current < latest {
		return fmt.Errorf("database at migration %d of %d: %s", current, latest, adviceMigrate)
	}
	s := gosync.New(pool)
	schemaVersion, err := s.SchemaVersion(e.ctx)
	if err != nil {
		return err
	}
	if f == nil {
		return printSummary(e, s, current, latest, schemaVersion, asJSON)
	}
	if err := requirePartition(e, s, f.Partition); err != nil {
		return err
	}
	rows, err := s.BarrierStatus(e.ctx, *f)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(e.stdout, map[string]any{"migration": current, "schema_version": schemaVersion, "checkpoints": rows})
	}
	fmt.Fprintf(e.stdout, "migration %d of %d, schema version %d, %d checkpoints listed\n", current, latest, schemaVersion, len(rows))
	if len(rows) == 0 {
		return nil
	}
	out := make([][]string, len(rows))
	for i, r := range rows {
		fence := "-"
		if r.FenceVersion != nil {
			fence = strconv.FormatInt(*r.FenceVersion, 10)
		}
		out[i] = []string{r.Partition, r.Checkpoint, string(r.State), strconv.FormatInt(r.SchemaVersion, 10), fence,
			strconv.FormatInt(r.OwnerEpoch, 10), strconv.FormatInt(r.Watermark, 10), strconv.FormatInt(r.CoverageSeq, 10),
			strconv.FormatInt(r.Lag, 10), strconv.FormatInt(r.ObservedRows, 10), r.UpdatedAt.UTC().Format(timeLayout)}
	}
	return table(e.stdout, []string{"PARTITION", "CHECKPOINT", "STATE", "VERSION", "FENCE", "EPOCH", "WATERMARK", "COVERAGE", "LAG", "ROWS", "UPDATED (UTC)"}, out)
}

const timeLayout = "2006-01-02 15:04:05"

func printSummary(e *env, s *gosync.Store, current, latest, schemaVersion int64, asJSON bool) error {
	sum, err := s.BarrierSummary(e.ctx)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(e.stdout, map[string]any{"migration": current, "schema_version": schemaVersion, "summary": sum})
	}
	var total int64
	out := make([][]string, len(sum))
	for i, r := range sum {
		total += r.Partitions
		out[i] = []string{strconv.FormatInt(r.SchemaVersion, 10), r.Checkpoint, string(r.State), strconv.FormatInt(r.Partitions, 10),
			strconv.FormatInt(r.MaxLag, 10), r.SlowestPartition, r.OldestUpdate.UTC().Format(timeLayout), r.NewestUpdate.UTC().Format(timeLayout)}
	}
	fmt.Fprintf(e.stdout, "migration %d of %d, schema version %d, %d checkpoints (rows: --partition, --state, --limit)\n",
		current, latest, schemaVersion, total)
	if len(sum) == 0 {
		return nil
	}
	return table(e.stdout, []string{"VERSION", "CHECKPOINT", "STATE", "PARTITIONS", "MAX LAG", "SLOWEST", "OLDEST UPDATE (UTC)", "NEWEST UPDATE (UTC)"}, out)
}
