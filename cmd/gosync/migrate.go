package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pressly/goose/v3"
	"github.com/spf13/cobra"

	"github.com/gosync/gosync/gosync"
)

// migrateFlags are the flags of the verbs that migrate (up, down).
type migrateFlags struct {
	owner              string
	lockTimeout        time.Duration
	foreignSchemaOwner bool
}

func (f *migrateFlags) register(c *cobra.Command) {
	fl := c.PersistentFlags()
	fl.StringVar(&f.owner, "owner", "", "the role that owns gosync's objects (SET ROLE to it; default: the login)")
	fl.DurationVar(&f.lockTimeout, "lock-timeout", gosync.DefaultLockTimeout,
		"give up waiting for the migration lock after this long, naming its holder")
	fl.BoolVar(&f.foreignSchemaOwner, "allow-foreign-schema-owner", false,
		"migrate into a schema owned by another role than the owner (it can drop gosync's objects; warns)")
}

// options are the migrator's options for the flags given.
func (e *env) migrateOptions() []gosync.MigrateOption {
	opts := []gosync.MigrateOption{gosync.WithVersionTable(e.versionTable), gosync.WithLockTimeout(e.migrateFlags.lockTimeout)}
	if e.migrateFlags.owner != "" {
		opts = append(opts, gosync.WithOwner(e.migrateFlags.owner))
	}
	if e.migrateFlags.foreignSchemaOwner {
		opts = append(opts, gosync.WithForeignSchemaOwner())
	}
	return opts
}

func upCmd(e *env) *cobra.Command {
	c := &cobra.Command{Use: "up", Args: cobra.NoArgs, Short: "migrate up, then print the status",
		RunE: func(*cobra.Command, []string) error {
			return e.withPool(func(pool *pgxpool.Pool) error {
				if err := migrate(e, pool, "up", false); err != nil {
					return err
				}
				return printStatus(e, pool, nil, false)
			})
		}}
	e.migrateFlags.register(c)
	return c
}

func migrateCmd(e *env) *cobra.Command {
	verb := func(name, short string) *cobra.Command {
		var asJSON bool
		c := &cobra.Command{Use: name, Args: cobra.NoArgs, Short: short,
			RunE: func(*cobra.Command, []string) error {
				return e.withPool(func(pool *pgxpool.Pool) error { return migrate(e, pool, name, asJSON) })
			}}
		jsonFlag(c, &asJSON)
		return c
	}
	up, down := verb("up", "apply every pending migration"), verb("down", "roll back the latest migration")
	e.migrateFlags.register(up)
	e.migrateFlags.register(down)
	return verbs("migrate", "gosync's goose migrations (embedded)", up, down,
		verb("status", "list the migrations, applied or pending (writes nothing)"),
		verb("version", "print the database's migration version (writes nothing)"))
}

// migrationJSON is one migration in every migrate --json document.
type migrationJSON struct {
	Version    int64   `json:"version"`
	File       string  `json:"file"`
	Applied    bool    `json:"applied"`
	AppliedAt  *string `json:"applied_at,omitempty"`
	DurationMs *int64  `json:"duration_ms,omitempty"`
}

func resultJSON(r *goose.MigrationResult, applied bool) migrationJSON {
	ms := r.Duration.Milliseconds()
	return migrationJSON{Version: r.Source.Version, File: r.Source.Path, Applied: applied, DurationMs: &ms}
}

func migrate(e *env, pool *pgxpool.Pool, what string, asJSON bool) error {
	p, err := gosync.NewMigrator(e.ctx, pool, e.migrateOptions()...)
	if err != nil {
		return err
	}
	defer p.Close()
	if e.migrateFlags.foreignSchemaOwner && (what == "up" || what == "down") {
		fmt.Fprintln(e.stderr, "gosync: warning: --allow-foreign-schema-owner: the schema's owner, if not the owner role, can drop gosync's objects and switch the barrier off (SECURITY.md, trust model)")
	}
	switch what {
	case "up":
		results, err := p.Up(e.ctx)
		if err != nil {
			return migrationError(err)
		}
		if asJSON {
			out := make([]migrationJSON, len(results))
			for i, r := range results {
				out[i] = resultJSON(r, true)
			}
			doc := map[string]any{"applied": out, "version": currentVersion(e, p)}
			if restored := p.RestoredFenceBody(); restored != gosync.FenceBodyNone {
				doc["restored_fence_function"] = string(restored)
			}
			return writeJSON(e.stdout, doc)
		}
		for _, r := range results {
			fmt.Fprintf(e.stdout, "applied %s (%s)\n", r.Source.Path, r.Duration.Round(time.Millisecond))
		}
		if restored := p.RestoredFenceBody(); restored != gosync.FenceBodyNone {
			fmt.Fprintf(e.stdout, "restored gosync's syncular_writer_fence(): it had %s (gosync's rules are sync_commits_writer_guard's either way)\n", restored)
		}
		if len(results) == 0 {
			fmt.Fprintln(e.stdout, "no pending migrations")
		}
	case "down":
		// 00001's Down drops the sync tables: refuse while they hold rows
		// (an adopted upstream database, or gosync's own log).
		if v, err := p.GetDBVersion(e.ctx); err == nil && v == 1 {
			if err := gosync.RefuseDroppingData(e.ctx, pool); err != nil {
				return err
			}
		}
		r, err := p.Down(e.ctx)
		if errors.Is(err, goose.ErrNoNextVersion) {
			if asJSON {
				return writeJSON(e.stdout, map[string]any{"rolled_back": nil, "version": 0})
			}
			fmt.Fprintln(e.stdout, "nothing to roll back: the database is at version 0")
			return nil
		}
		if err != nil {
			return migrationError(err)
		}
		if asJSON {
			return writeJSON(e.stdout, map[string]any{"rolled_back": resultJSON(r, false), "version": currentVersion(e, p)})
		}
		fmt.Fprintf(e.stdout, "rolled back %s\n", r.Source.Path)
	case "status":
		statuses, err := p.Status(e.ctx)
		if err != nil {
			return err
		}
		rows := make([]migrationJSON, len(statuses))
		for i, s := range statuses {
			rows[i] = migrationJSON{Version: s.Source.Version, File: s.Source.Path, Applied: !s.AppliedAt.IsZero()}
			if rows[i].Applied {
				at := s.AppliedAt.UTC().Format(time.RFC3339)
				rows[i].AppliedAt = &at
			}
		}
		if asJSON {
			return writeJSON(e.stdout, rows)
		}
		// goose's layout: a header, then one line per file.
		fmt.Fprintln(e.stdout, "    Applied At (UTC)          Migration")
		fmt.Fprintln(e.stdout, "    =======================================")
		for _, r := range rows {
			at := "Pending"
			if r.Applied {
				at = *r.AppliedAt
			}
			fmt.Fprintf(e.stdout, "    %-25s -- %s\n", at, r.File)
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

// currentVersion is the version after up/down; -1 when it cannot be read
// (the migrations themselves succeeded).
func currentVersion(e *env, p *gosync.Migrator) int64 {
	v, err := p.GetDBVersion(e.ctx)
	if err != nil {
		return -1
	}
	return v
}

// migrationError is the failing file and the server's error with its hint,
// instead of goose's message, which repeats the whole failed statement.
func migrationError(err error) error {
	var partial *goose.PartialError
	var pg *pgconn.PgError
	if !errors.As(err, &partial) || !errors.As(err, &pg) {
		return gosync.MapError(err)
	}
	if pg.Hint != "" {
		return fmt.Errorf("%s: %w (%s)", partial.Failed.Source.Path, gosync.MapError(pg), pg.Hint)
	}
	return fmt.Errorf("%s: %w", partial.Failed.Source.Path, gosync.MapError(pg))
}
