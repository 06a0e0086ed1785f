// Command gosync operates a gosync database: migrations, the barrier's
// status, checkpoints, the serve gate, an example backfill, and a demo of
// the whole migration barrier.
//
// The database is --db, else $DATABASE_URL. With neither, every command
// refuses in one line, except `demo` (a throwaway local Postgres, removed
// on exit) and `db` (which starts one and prints its URL).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gosync/gosync/gosync"
)

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
	if err == nil {
		return 0
	}
	if errors.Is(err, errGateClosed) || errors.Is(err, errNotActivated) {
		return 3 // the command printed why
	}
	fmt.Fprintln(stderr, "gosync: "+strings.TrimPrefix(oneLine(err.Error()), "gosync: "))
	var u usageError
	if errors.As(err, &u) {
		return 2
	}
	return 1
}

// oneLine folds a multi-line error (pgx lists every address it tried,
// cobra appends suggestions) into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// env is what a command runs with: the global flags and the streams.
type env struct {
	ctx            context.Context
	dbURL          string
	versionTable   string
	connectTimeout time.Duration
	migrateFlags   migrateFlags
	stdout         io.Writer
	stderr         io.Writer
}

// commandName is c's path without the program name, as errors print it
// after "gosync: ".
func commandName(c *cobra.Command) string {
	if !c.HasParent() {
		return "gosync"
	}
	return strings.TrimPrefix(c.CommandPath(), "gosync ")
}

// run is the command line, testable in-process: it returns what main maps
// to an exit status with exitCode.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	e := &env{ctx: ctx, stdout: stdout, stderr: stderr}
	root := newRoot(e)
	// Errors before a command runs (flags, required flags, unknown
	// commands, arguments) are usage errors; a command's own RunE says
	// which of its are.
	started := false
	walk(root, func(c *cobra.Command) {
		if runE := c.RunE; runE != nil {
			c.RunE = func(c *cobra.Command, args []string) error {
				started = true
				return runE(c, args)
			}
		}
	})
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	var u usageError
	if err != nil && !started && !errors.As(err, &u) {
		err = usageError{err.Error()}
	}
	return err
}

// newRoot is the command tree.
func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "gosync",
		Short: "the migration barrier for a sync log shared by several server versions",
		Long: `gosync — the migration barrier for a sync log shared by several server versions.

The database is --db, else $DATABASE_URL; without either, commands refuse
(except demo, which uses a throwaway Postgres, and db, which starts one).
gosync's migrations are recorded in --version-table (default
gosync_db_version), never in the application's goose_db_version.

Exit status: 0 ok, 1 failure, 2 bad usage, 3 gate closed or checkpoint not
activated (stale, unverifiable).`,
		Version:       buildVersion(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.CompletionOptions.DisableDefaultCmd = true
	pf := root.PersistentFlags()
	pf.StringVar(&e.dbURL, "db", os.Getenv("DATABASE_URL"), "Postgres URL (default $DATABASE_URL)")
	pf.StringVar(&e.versionTable, "version-table", gosync.DefaultVersionTable, "the table recording gosync's migrations")
	pf.DurationVar(&e.connectTimeout, "connect-timeout", 10*time.Second, "give up connecting after this long")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usagef("%s: %v", commandName(c), err)
	})
	root.AddCommand(upCmd(e), migrateCmd(e), statusCmd(e), checkpointCmd(e), gateCmd(e), backfillCmd(e), demoCmd(e), dbCmd(e))
	return root
}

// walk calls fn for every command in the tree, c included.
func walk(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, s := range c.Commands() {
		walk(s, fn)
	}
}

// buildVersion is the module version the binary was built from.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// verbs is a parent command: its verbs are subcommands, and no verb or an
// unknown one is a usage error (cobra alone would print help and exit 0).
func verbs(use, short string, sub ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			names := make([]string, 0, len(sub))
			for _, s := range sub {
				names = append(names, s.Name())
			}
			return usagef("%s: a verb is required (%s; see --help)", commandName(c), strings.Join(names, ", "))
		}}
	c.AddCommand(sub...)
	return c
}

// jsonFlag adds --json to the commands that print a document.
func jsonFlag(c *cobra.Command, v *bool) {
	c.Flags().BoolVar(v, "json", false, "print JSON")
}
