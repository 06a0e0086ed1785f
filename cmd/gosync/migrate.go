package main

import (
	"context"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gosync/gosync/gosync"
)

func runMigrate(ctx context.Context, pool *pgxpool.Pool, args []string, out io.Writer) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: gosync migrate up|down|status|version")
	}
	p, err := gosync.NewMigrator(pool)
	if err != nil {
		return err
	}
	defer p.Close()
	switch args[0] {
	case "up":
		results, err := p.Up(ctx)
		if err != nil {
			return err
		}
		for _, r := range results {
			fmt.Fprintf(out, "applied %s (%s)\n", r.Source.Path, r.Duration.Round(1e6))
		}
		if len(results) == 0 {
			fmt.Fprintln(out, "no pending migrations")
		}
	case "down":
		r, err := p.Down(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "rolled back %s\n", r.Source.Path)
	case "status":
		statuses, err := p.Status(ctx)
		if err != nil {
			return err
		}
		for _, s := range statuses {
			at := "pending"
			if !s.AppliedAt.IsZero() {
				at = s.AppliedAt.Format("2006-01-02 15:04:05")
			}
			fmt.Fprintf(out, "%-20s %s\n", at, s.Source.Path)
		}
	case "version":
		v, err := p.GetDBVersion(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, v)
	default:
		return fmt.Errorf("unknown migrate command %q (up|down|status|version)", args[0])
	}
	return nil
}
