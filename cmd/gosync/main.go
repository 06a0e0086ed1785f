// Command gosync operates a gosync database: migrations, barrier status and
// a throwaway local Postgres for trying it out.
//
// With no --db flag and no DATABASE_URL, commands run against a throwaway
// local Postgres that is removed when the command exits (Ctrl-C included).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gosync/gosync/internal/pglocal"
)

const usage = `gosync — the migration barrier for a shared sync log in Postgres.

Usage:
  gosync [--db URL] up                       migrate up, then print the status
  gosync [--db URL] migrate up|down|status|version
  gosync [--db URL] status                   print migration and barrier status
  gosync db                                  start a throwaway Postgres, print its URL, wait for Ctrl-C

The database is --db, else $DATABASE_URL, else a throwaway local Postgres
removed on exit.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "gosync:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("gosync", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), usage) }
	dbURL := fs.String("db", os.Getenv("DATABASE_URL"), "Postgres URL")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return errors.New("missing command")
	}
	cmd, rest := fs.Arg(0), fs.Args()[1:]
	if cmd == "db" {
		return runDB(ctx, out)
	}
	return withPool(ctx, *dbURL, out, func(pool *pgxpool.Pool) error {
		switch cmd {
		case "up":
			if err := runMigrate(ctx, pool, []string{"up"}, out); err != nil {
				return err
			}
			return runStatus(ctx, pool, out)
		case "migrate":
			return runMigrate(ctx, pool, rest, out)
		case "status":
			return runStatus(ctx, pool, out)
		default:
			return fmt.Errorf("unknown command %q (see gosync --help)", cmd)
		}
	})
}

// withPool connects to url, or to a throwaway local Postgres when url is
// empty, and removes that server when fn returns.
func withPool(ctx context.Context, url string, out io.Writer, fn func(*pgxpool.Pool) error) error {
	if url == "" {
		srv, err := pglocal.Start(ctx)
		if err != nil {
			return err
		}
		defer srv.Stop()
		fmt.Fprintln(out, "using a throwaway Postgres (removed on exit):", srv.URL)
		url = srv.URL
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return fmt.Errorf("database URL: %w", err)
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil {
		return fmt.Errorf("cannot reach the database: %w", err)
	}
	return fn(pool)
}

// runDB serves a throwaway Postgres until interrupted: `make db`.
func runDB(ctx context.Context, out io.Writer) error {
	srv, err := pglocal.Start(ctx)
	if err != nil {
		return err
	}
	defer srv.Stop()
	fmt.Fprintf(out, "DATABASE_URL=%s\n(Ctrl-C stops the server and removes its data)\n", srv.URL)
	<-ctx.Done()
	return nil
}
