package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/gosync/gosync/internal/pglocal"
)

// errNoDatabase: gosync never guesses a database, since a throwaway one
// would forget what the command did.
var errNoDatabase = usageError{"no database: set DATABASE_URL, pass --db URL, or start one with `gosync db`"}

// adviceMigrate is the one line every command gives on a database without
// gosync's schema.
const adviceMigrate = "run `gosync migrate up`"

// withPool connects to the configured database and runs fn.
func (e env) withPool(fn func(*pgxpool.Pool) error) error {
	if e.dbURL == "" {
		return errNoDatabase
	}
	return e.connect(e.dbURL, fn)
}

// withThrowaway runs fn on the configured database, else on a throwaway
// local Postgres removed when fn returns (demo).
func (e env) withThrowaway(fn func(*pgxpool.Pool) error) error {
	if e.dbURL != "" {
		return e.connect(e.dbURL, fn)
	}
	srv, err := pglocal.Start(e.ctx)
	if err != nil {
		return err
	}
	defer srv.Stop()
	fmt.Fprintln(e.stderr, "gosync: using a throwaway Postgres (removed on exit):", srv.URL)
	return e.connect(srv.URL, fn)
}

func (e env) connect(dbURL string, fn func(*pgxpool.Pool) error) error {
	if i := strings.Index(dbURL, "://"); i >= 0 {
		if u, err := url.Parse(dbURL); err == nil && u.Scheme != "postgres" && u.Scheme != "postgresql" {
			return usagef("--db: %s:// is not a Postgres URL (postgres://user@host/db)", u.Scheme)
		}
	}
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return usagef("--db: not a Postgres URL or DSN: %v", err)
	}
	if e.connectTimeout > 0 {
		cfg.ConnConfig.ConnectTimeout = e.connectTimeout
	}
	pool, err := pgxpool.NewWithConfig(e.ctx, cfg)
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer pool.Close()
	pingCtx, cancel := context.WithTimeout(e.ctx, e.connectTimeout)
	defer cancel()
	if e.connectTimeout <= 0 {
		pingCtx = e.ctx
	}
	if err := pool.Ping(pingCtx); err != nil {
		if errors.Is(pingCtx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("cannot reach the database: no answer within %s (--connect-timeout)", e.connectTimeout)
		}
		return fmt.Errorf("cannot reach the database: %w", err)
	}
	return notMigrated(fn(pool))
}

// notMigrated turns "relation/function sync_... does not exist" into the
// advice to migrate.
func notMigrated(err error) error {
	var pg *pgconn.PgError
	if errors.As(err, &pg) && (pg.Code == "42P01" || pg.Code == "42883") && strings.Contains(pg.Message, "sync_") {
		return fmt.Errorf("the database has no gosync schema: %s", adviceMigrate)
	}
	return err
}

// dbCmd serves a throwaway Postgres until interrupted: `make db`.
func dbCmd(e *env) *cobra.Command {
	return &cobra.Command{Use: "db", Args: cobra.NoArgs,
		Short: "start a throwaway Postgres, print its URL, remove it on Ctrl-C",
		RunE: func(*cobra.Command, []string) error {
			srv, err := pglocal.Start(e.ctx)
			if err != nil {
				return err
			}
			defer srv.Stop()
			fmt.Fprintf(e.stdout, "DATABASE_URL=%s\n(Ctrl-C stops the server and removes its data)\n", srv.URL)
			<-e.ctx.Done()
			return nil
		}}
}
