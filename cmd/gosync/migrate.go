package main

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pressly/goose/v3"

	"github.com/gosync/gosync/gosync"
)

func runUp(e env, args []string) error {
	if err := parse(flags("up", e), args); err != nil {
		return err
	}
	return e.withPool(func(pool *pgxpool.Pool) error {
		if err := migrate(e, pool, "up", false); err != nil {
			return err
		}
		return printStatus(e, pool, nil, false)
	})
}

func runMigrate(e env, args []string) error {
	if len(args) == 0 {
		return usagef("usage: gosync migrate up|down|status|version [--json]")
	}
	fs := flags("migrate "+args[0], e)
	asJSON := fs.Bool("json", false, "print JSON (status, version)")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "up", "down", "status", "version":
	default:
		return usagef("unknown migrate command %q (up|down|status|version)", args[0])
	}
	return e.withPool(func(pool *pgxpool.Pool) error { return migrate(e, pool, args[0], *asJSON) })
}

func migrate(e env, pool *pgxpool.Pool, what string, asJSON bool) error {
	p, err := gosync.NewMigrator(e.ctx, pool, gosync.WithVersionTable(e.versionTable))
	if err != nil {
		return err
	}
	defer p.Close()
	switch what {
	case "up":
		results, err := p.Up(e.ctx)
		if err != nil {
			return migrationError(err)
		}
		for _, r := range results {
			fmt.Fprintf(e.stdout, "applied %s (%s)\n", r.Source.Path, r.Duration.Round(1e6))
		}
		if len(results) == 0 {
			fmt.Fprintln(e.stdout, "no pending migrations")
		}
	case "down":
		r, err := p.Down(e.ctx)
		if err != nil {
			return migrationError(err)
		}
		fmt.Fprintf(e.stdout, "rolled back %s\n", r.Source.Path)
	case "status":
		statuses, err := p.Status(e.ctx)
		if err != nil {
			return err
		}
		type row struct {
			Version int64  `json:"version"`
			File    string `json:"file"`
			Applied bool   `json:"applied"`
			At      string `json:"applied_at,omitempty"`
		}
		rows := make([]row, len(statuses))
		for i, s := range statuses {
			rows[i] = row{Version: s.Source.Version, File: s.Source.Path, Applied: !s.AppliedAt.IsZero()}
			if rows[i].Applied {
				rows[i].At = s.AppliedAt.UTC().Format("2006-01-02T15:04:05Z")
			}
		}
		if asJSON {
			return writeJSON(e.stdout, rows)
		}
		for _, r := range rows {
			at := "pending"
			if r.Applied {
				at = r.At
			}
			fmt.Fprintf(e.stdout, "%-22s %s\n", at, r.File)
		}
	case "version":
		current, target, err := p.GetVersions(e.ctx)
		if err != nil {
			return err
		}
		if asJSON {
			return writeJSON(e.stdout, map[string]int64{"version": current, "latest": target})
		}
		fmt.Fprintln(e.stdout, current)
	}
	return nil
}

// migrationError is the failing file and the server's error with its hint,
// instead of goose's message, which repeats the whole failed statement.
func migrationError(err error) error {
	var partial *goose.PartialError
	var pg *pgconn.PgError
	if !errors.As(err, &partial) || !errors.As(err, &pg) {
		return err
	}
	if pg.Hint != "" {
		return fmt.Errorf("%s: %w (%s)", partial.Failed.Source.Path, gosync.MapError(pg), pg.Hint)
	}
	return fmt.Errorf("%s: %w", partial.Failed.Source.Path, gosync.MapError(pg))
}
