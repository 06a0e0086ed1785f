package main

import (
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gosync/gosync/gosync"
)

func runStatus(e env, args []string) error {
	fs := flags("status", e)
	partition := fs.String("partition", "", "only this partition")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	return e.withPool(func(pool *pgxpool.Pool) error { return printStatus(e, pool, *partition, *asJSON) })
}

// requirePartition turns an unknown partition into a clear error.
func requirePartition(e env, s *gosync.Store, partition string) error {
	if partition == "" {
		return nil
	}
	known, err := s.PartitionKnown(e.ctx, partition)
	if err != nil {
		return err
	}
	if !known {
		return fmt.Errorf("unknown partition %q (no log, registration, checkpoint or fence)", partition)
	}
	return nil
}

func printStatus(e env, pool *pgxpool.Pool, partition string, asJSON bool) error {
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
		return fmt.Errorf("database at migration %d of %d: run `gosync migrate up`", current, latest)
	}
	s := gosync.New(pool)
	if err := requirePartition(e, s, partition); err != nil {
		return err
	}
	rows, err := s.BarrierStatus(e.ctx, partition)
	if err != nil {
		return err
	}
	var schemaVersion int64
	if err := pool.QueryRow(e.ctx, "SELECT coalesce((SELECT schema_version FROM sync_schema_meta WHERE id = 1), 0)").Scan(&schemaVersion); err != nil {
		return err
	}
	if asJSON {
		return writeJSON(e.stdout, map[string]any{"migration": current, "schema_version": schemaVersion, "checkpoints": rows})
	}
	fmt.Fprintf(e.stdout, "migration %d of %d, schema version %d, %d checkpoints\n", current, latest, schemaVersion, len(rows))
	if len(rows) == 0 {
		return nil
	}
	out := make([][]string, len(rows))
	for i, r := range rows {
		fence := "-"
		if r.FenceVersion != nil {
			fence = strconv.FormatInt(*r.FenceVersion, 10)
		}
		out[i] = []string{r.Partition, r.Checkpoint, r.State, strconv.FormatInt(r.SchemaVersion, 10), fence,
			strconv.FormatInt(r.OwnerEpoch, 10), strconv.FormatInt(r.Watermark, 10), strconv.FormatInt(r.CoverageSeq, 10),
			strconv.FormatInt(r.Lag, 10), strconv.FormatInt(r.ObservedRows, 10), r.UpdatedAt.UTC().Format("2006-01-02 15:04:05")}
	}
	return table(e.stdout, []string{"PARTITION", "CHECKPOINT", "STATE", "VERSION", "FENCE", "EPOCH", "WATERMARK", "COVERAGE", "LAG", "ROWS", "UPDATED (UTC)"}, out)
}
