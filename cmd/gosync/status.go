package main

import (
	"context"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gosync/gosync/db"
	"github.com/gosync/gosync/gosync"
)

// runStatus prints the migration version and the barrier's state: the
// writer fences in force and how much of the log exists.
func runStatus(ctx context.Context, pool *pgxpool.Pool, out io.Writer) error {
	p, err := gosync.NewMigrator(pool)
	if err != nil {
		return err
	}
	defer p.Close()
	current, target, err := p.GetVersions(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "schema version %d of %d", current, target)
	if current < target {
		fmt.Fprint(out, " (pending migrations: run `gosync migrate up`)")
		fmt.Fprintln(out)
		return nil
	}
	fmt.Fprintln(out)
	var partitions, commits int64
	if err := pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM sync_partitions), (SELECT count(*) FROM sync_commits)").
		Scan(&partitions, &commits); err != nil {
		return err
	}
	fmt.Fprintf(out, "partitions %d, commits %d\n", partitions, commits)
	fences, err := db.New().ListWriterFences(ctx, pool)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "writer fences: %d\n", len(fences))
	for _, f := range fences {
		fmt.Fprintf(out, "  %-30s requires writer_version >= %d\n", f.Partition, f.RequiredWriterVersion)
	}
	return nil
}
