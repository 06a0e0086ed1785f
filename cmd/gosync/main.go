// Command gosync operates a gosync database: migrations, the barrier's
// status, checkpoints, the serve gate, an example backfill, and a demo of
// the whole migration barrier.
//
// With no --db flag and no DATABASE_URL, every command runs against a
// throwaway local Postgres that is removed when the command exits (Ctrl-C
// included).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pglocal"
)

const usage = `gosync — the migration barrier for a sync log shared by several server versions.

Usage:
  gosync [--db URL] [--version-table T] <command> [flags]

Commands:
  demo [--partitions N] [--workers W]    the whole story on a throwaway Postgres, step by step
                                         (on N partitions: one bump, a flat gate, a fleet backfill)
  up                                     migrate up, then print the status
  migrate up|down|status|version         goose migrations (embedded)
  status [--json]                        the barrier summary: per version, projection and state
  status [--partition P] [--state S] [--limit N] [--json]
                                         the rows: fences, checkpoints, watermarks, lag
  checkpoint declare|claim --partition P --name N --version V
  checkpoint activate --partition P --name N --epoch E --watermark W --sources a,b
                                         exit 3 when stale or unverifiable
  checkpoint list [--partition P] [--json]
  gate --partition P --running N [--declared p/n,*/n,...] [--epoch E] [--json]
  backfill [--partition P] [--batch N] [--pause D] [--rate R]
                                         fill the example todos_by_owner projection in one partition
  backfill --all [--workers N] [--lease D] [...]
                                         ... in every partition that declares it, N at a time
  backfill ... --name N --sources a,b --apply file.sql
                                         a projection of your own: the batch apply as one SQL
                                         statement ($1 partition, $2 after seq, $3 through seq, $4 sources)
  db                                     start a throwaway Postgres, print its URL, wait for Ctrl-C

The database is --db, else $DATABASE_URL, else a throwaway local Postgres
removed on exit. gosync's migrations are recorded in --version-table
(default gosync_db_version), never in the application's goose_db_version.
Exit status: 0 ok, 1 failure, 2 bad usage, 3 gate closed or checkpoint not
activated (stale, unverifiable).
`

// usageError is bad input on the command line: exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode prints err as one line and maps it to the exit status.
func exitCode(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if errors.Is(err, errGateClosed) || errors.Is(err, errNotActivated) {
		return 3 // the gate printed why
	}
	fmt.Fprintln(stderr, "gosync: "+oneLine(err.Error()))
	var u usageError
	if errors.As(err, &u) {
		return 2
	}
	return 1
}

// oneLine folds a multi-line error (pgx lists every address it tried) into
// one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// env is what a command runs with.
type env struct {
	ctx          context.Context
	dbURL        string
	versionTable string
	stdout       io.Writer
	stderr       io.Writer
}

type command func(e env, args []string) error

var commands = map[string]command{
	"up":         runUp,
	"migrate":    runMigrate,
	"status":     runStatus,
	"checkpoint": runCheckpoint,
	"gate":       runGate,
	"backfill":   runBackfill,
	"demo":       runDemo,
	"db":         runDB,
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("gosync", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stdout, usage) }
	dbURL := fs.String("db", os.Getenv("DATABASE_URL"), "Postgres URL (default $DATABASE_URL, else a throwaway local Postgres)")
	versionTable := fs.String("version-table", gosync.DefaultVersionTable, "the table recording gosync's migrations")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return usagef("missing command")
	}
	cmd, ok := commands[fs.Arg(0)]
	if !ok {
		return usagef("unknown command %q (see gosync --help)", fs.Arg(0))
	}
	return cmd(env{ctx: ctx, dbURL: *dbURL, versionTable: *versionTable, stdout: stdout, stderr: stderr}, fs.Args()[1:])
}

// flags returns a flag set for a subcommand whose errors are usage errors.
func flags(name string, e env) *flag.FlagSet {
	fs := flag.NewFlagSet("gosync "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

// withPool connects to the database, or to a throwaway local Postgres when
// no URL is configured, and removes that server when fn returns.
func (e env) withPool(fn func(*pgxpool.Pool) error) error {
	url := e.dbURL
	if url == "" {
		srv, err := pglocal.Start(e.ctx)
		if err != nil {
			return err
		}
		defer srv.Stop()
		fmt.Fprintln(e.stderr, "gosync: using a throwaway Postgres (removed on exit):", srv.URL)
		url = srv.URL
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return fmt.Errorf("bad database URL: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(e.ctx, cfg)
	if err != nil {
		return fmt.Errorf("database: %w", err)
	}
	defer pool.Close()
	if err := pool.Ping(e.ctx); err != nil {
		return fmt.Errorf("cannot reach the database: %w", err)
	}
	return fn(pool)
}

// runDB serves a throwaway Postgres until interrupted: `make db`.
func runDB(e env, args []string) error {
	if err := parse(flags("db", e), args); err != nil {
		return err
	}
	srv, err := pglocal.Start(e.ctx)
	if err != nil {
		return err
	}
	defer srv.Stop()
	fmt.Fprintf(e.stdout, "DATABASE_URL=%s\n(Ctrl-C stops the server and removes its data)\n", srv.URL)
	<-e.ctx.Done()
	return nil
}
