package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	gosyncpkg "github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

type result struct {
	stdout, stderr string
	code           int
}

// invoke runs the command in-process, with DATABASE_URL unset (the
// database is --db), and maps its error to the exit status as main does.
func invoke(t *testing.T, args ...string) result {
	t.Helper()
	t.Setenv("DATABASE_URL", "")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, &stdout, &stderr)
	code := exitCode(err, &stderr)
	return result{stdout.String(), stderr.String(), code}
}

func (r result) want(t *testing.T, code int, args ...string) result {
	t.Helper()
	if r.code != code {
		t.Fatalf("gosync %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	return r
}

func (r result) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, r.stdout)
	}
}

// oneLineOn asserts stderr is exactly one "gosync: " line mentioning want.
func (r result) oneLineOn(t *testing.T, want string, args ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "gosync: ") || !strings.Contains(lines[0], want) {
		t.Errorf("gosync %s: stderr %q, want one line mentioning %q", strings.Join(args, " "), r.stderr, want)
	}
}

// volatile are the keys whose values change from run to run (clocks,
// durations); golden files hold "<volatile>" there.
var volatile = map[string]bool{"updated_at_ms": true, "updated_at": true, "applied_at": true, "duration_ms": true,
	"oldest_update": true, "newest_update": true}

func normalise(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if volatile[k] && x != nil {
				v[k] = "<volatile>"
			} else {
				v[k] = normalise(x)
			}
		}
	case []any:
		for i, x := range v {
			v[i] = normalise(x)
		}
	}
	return v
}

// golden compares a --json document, volatile fields normalised, with
// testdata/name.json (go test -update rewrites it).
func golden(t *testing.T, name string, r result) {
	t.Helper()
	var doc any
	r.json(t, &doc)
	var buf bytes.Buffer
	if err := writeJSON(&buf, normalise(doc)); err != nil {
		t.Fatal(err)
	}
	got := buf.Bytes()
	path := filepath.Join("testdata", name+".json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s:\n%s", name, path, got)
	}
}

// TestJSONShapes: every --json document, in one key case (snake_case),
// single objects for single results, checked against golden files.
func TestJSONShapes(t *testing.T) {
	d := pgtest.New(t)
	cli := func(code int, args ...string) result {
		t.Helper()
		return invoke(t, append([]string{"--db", d.URL}, args...)...).want(t, code, args...)
	}
	golden(t, "migrate_version", cli(0, "migrate", "version", "--json"))
	golden(t, "migrate_status", cli(0, "migrate", "status", "--json"))
	golden(t, "migrate_up_nothing", cli(0, "migrate", "up", "--json"))
	golden(t, "checkpoint_declare", cli(0, "checkpoint", "declare", "--partition", "p1", "--name", "proj", "--version", "2", "--json"))
	golden(t, "checkpoint_claim", cli(0, "checkpoint", "claim", "--partition", "p1", "--name", "proj", "--version", "2", "--json"))
	golden(t, "gate_schema", cli(3, "gate", "--partition", "p1", "--running", "2", "--json"))
	if _, err := d.Pool.Exec(context.Background(), `INSERT INTO sync_schema_meta VALUES (1, 2, '{"todos": []}')`); err != nil {
		t.Fatal(err)
	}
	golden(t, "gate_checkpoint", cli(3, "gate", "--partition", "p1", "--running", "2", "--declared", "p1/proj", "--json"))
	golden(t, "status_rows", cli(0, "status", "--partition", "p1", "--json"))
	golden(t, "checkpoint_activate_stale", cli(3, "checkpoint", "activate", "--partition", "p1", "--name", "proj", "--epoch", "1", "--watermark", "7", "--sources", "todos", "--json"))
	golden(t, "checkpoint_activate", cli(0, "checkpoint", "activate", "--partition", "p1", "--name", "proj", "--epoch", "1", "--watermark", "0", "--sources", "todos", "--json"))
	golden(t, "gate_open", cli(0, "gate", "--partition", "p1", "--running", "2", "--json"))
	golden(t, "checkpoint_list", cli(0, "checkpoint", "list", "--partition", "p1", "--json"))
	golden(t, "status_summary", cli(0, "status", "--json"))
	golden(t, "migrate_down", cli(0, "migrate", "down", "--json"))
	golden(t, "migrate_up", cli(0, "migrate", "up", "--json"))
}

// TestHumanOutput: the gate's refusal is a sentence (never a Go map), names
// are escaped, migrate status has goose's header.
func TestHumanOutput(t *testing.T) {
	d := pgtest.New(t)
	ctx := context.Background()
	cli := func(code int, args ...string) result {
		t.Helper()
		return invoke(t, append([]string{"--db", d.URL}, args...)...).want(t, code, args...)
	}
	if _, err := d.Pool.Exec(ctx, `SELECT sync_declare_checkpoint('p1', E'evil\x1b[2J\nname', 2)`); err != nil {
		t.Fatal(err)
	}
	if r := cli(3, "gate", "--partition", "p1", "--running", "2"); strings.Contains(r.stdout, "map[") ||
		!strings.Contains(r.stdout, "closed: schema: stored schema version 0, running 2") {
		t.Fatalf("gate:\n%s", r.stdout)
	}
	if _, err := d.Pool.Exec(ctx, `INSERT INTO sync_schema_meta VALUES (1, 2, '{}')`); err != nil {
		t.Fatal(err)
	}
	// A checkpoint named with an ESC sequence and a newline can neither
	// drive the terminal nor break a line or a table.
	for _, args := range [][]string{{"checkpoint", "list", "--partition", "p1"}, {"status", "--partition", "p1"}, {"status"}} {
		r := cli(0, args...)
		if strings.Contains(r.stdout, "\x1b") || !strings.Contains(r.stdout, `"evil\x1b[2J\nname"`) {
			t.Errorf("gosync %s printed a raw control character:\n%q", strings.Join(args, " "), r.stdout)
		}
	}
	r := cli(3, "gate", "--partition", "p1", "--running", "2")
	if strings.Contains(r.stdout, "\x1b") || !strings.Contains(r.stdout, `closed: checkpoint p1/"evil\x1b[2J\nname" is not activated`) {
		t.Errorf("gate printed a raw control character:\n%q", r.stdout)
	}
	if r := cli(0, "migrate", "status"); !strings.HasPrefix(r.stdout, "    Applied At (UTC)          Migration\n    ====") ||
		!strings.Contains(r.stdout, " -- 00001_") {
		t.Errorf("migrate status:\n%s", r.stdout)
	}
}

// TestFlagsAnywhere: global flags before or after the command and verb.
func TestFlagsAnywhere(t *testing.T) {
	d := pgtest.New(t)
	want := invoke(t, "--db", d.URL, "checkpoint", "list", "--json").want(t, 0).stdout
	for _, args := range [][]string{
		{"checkpoint", "--db", d.URL, "list", "--json"},
		{"checkpoint", "list", "--json", "--db", d.URL},
		{"--connect-timeout", "5s", "checkpoint", "list", "--db", d.URL, "--json", "--version-table", "gosync_db_version"},
	} {
		if r := invoke(t, args...).want(t, 0, args...); r.stdout != want {
			t.Errorf("gosync %s: %q, want %q", strings.Join(args, " "), r.stdout, want)
		}
	}
}

// TestHelp: `gosync help <cmd>`, `<cmd> --help` and `<cmd> <verb> --help`
// print the description and exactly the flags that command takes, on
// stdout, exit 0.
func TestHelp(t *testing.T) {
	root := newRoot(&env{})
	all := map[string]bool{}
	walk(root, func(c *cobra.Command) { c.LocalFlags().VisitAll(func(f *pflag.Flag) { all[f.Name] = true }) })
	walk(root, func(c *cobra.Command) {
		path := strings.Fields(c.CommandPath())[1:]
		description := c.Short
		if c.Long != "" {
			description = c.Long
		}
		takes := map[string]bool{"help": true, "version": !c.HasParent()}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) { takes[f.Name] = true })
		for _, args := range [][]string{append(append([]string{}, path...), "--help"), append([]string{"help"}, path...)} {
			r := invoke(t, args...).want(t, 0, args...)
			if r.stderr != "" || !strings.HasPrefix(r.stdout, description) {
				t.Errorf("gosync %s: stdout %q, stderr %q", strings.Join(args, " "), r.stdout, r.stderr)
				continue
			}
			// The Flags: section lists exactly the command's own flags.
			_, flags, _ := strings.Cut(r.stdout, "\nFlags:\n")
			flags, _, _ = strings.Cut(flags, "\n\n")
			for name := range all {
				if shown := strings.Contains(flags, "--"+name+" "); shown != takes[name] {
					t.Errorf("gosync %s: --%s shown %v, taken %v", strings.Join(args, " "), name, shown, takes[name])
				}
			}
		}
	})
	if r := invoke(t, "--version").want(t, 0); !strings.HasPrefix(r.stdout, "gosync version ") {
		t.Errorf("--version: %q", r.stdout)
	}
}

// TestUsageErrors: a mistyped flag, a flag the verb does not take, an
// unknown command, a missing verb or flag: one line on stderr, exit 2, and
// the database untouched.
func TestUsageErrors(t *testing.T) {
	d := pgtest.New(t)
	for _, tc := range []struct {
		args    []string
		mention string
	}{
		{[]string{"checkpoint", "list", "--epoch", "3"}, "checkpoint list: unknown flag: --epoch"},
		{[]string{"status", "--partiton", "p1"}, "status: unknown flag: --partiton"},
		{[]string{"--dbb", "x", "status"}, "unknown flag: --dbb"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"checkpoint"}, "checkpoint: a verb is required (declare, claim, activate, list, remove"},
		{[]string{"checkpoint", "frob"}, `unknown command "frob" for "gosync checkpoint"`},
		{[]string{"migrate", "sideways"}, `unknown command "sideways"`},
		{[]string{"checkpoint", "declare", "--partition", "p1"}, `required flag(s) "name", "version" not set`},
		{[]string{"checkpoint", "declare", "--partition", "p1", "--name", "x", "--version", "nine"}, `invalid argument "nine" for "--version"`},
		{[]string{"checkpoint", "activate", "--partition", "p1", "--name", "x", "--epoch", "1", "--watermark", "0"}, `required flag(s) "sources" not set`},
		{[]string{"status", "--state", "finished"}, "not declared, backfilling or activated"},
		{[]string{"gate", "--partition", "p1", "--running", "2", "--declared", "nope"}, `--declared "nope" is not partition/name`},
		{[]string{"backfill"}, "backfill: give --partition P or --all"},
		{[]string{"backfill", "--partition", "p1", "--all"}, "backfill: give --partition P or --all"},
		// Without --apply the example is asked for by name: never created by default.
		{[]string{"backfill", "--partition", "p1"}, "backfill: give --apply file.sql --sources T --name N (a projection of your own) or --example todos"},
		{[]string{"backfill", "--all", "--name", "todos_by_owner"}, "backfill: give --apply file.sql --sources T --name N (a projection of your own) or --example todos"},
		{[]string{"backfill", "--partition", "p1", "--example", "shop"}, `backfill: --example "shop": the one example is todos`},
		{[]string{"backfill", "--partition", "p1", "--example", "todos", "--apply", "x.sql"}, "or --example todos"},
		{[]string{"backfill", "--partition", "p1", "--example", "todos", "--name", "other"}, "--name and --sources go with --apply"},
		{[]string{"backfill", "--all", "--apply", "x.sql", "--sources", "todos"}, "backfill: --apply file.sql needs --sources and --name"},
	} {
		args := append([]string{"--db", d.URL}, tc.args...)
		r := invoke(t, args...).want(t, 2, tc.args...)
		r.oneLineOn(t, tc.mention, tc.args...)
	}
	var n int
	if err := d.Pool.QueryRow(context.Background(), "SELECT count(*) FROM sync_backfill_checkpoints").Scan(&n); err != nil || n != 0 {
		t.Fatalf("usage errors changed the database: %d checkpoints, %v", n, err)
	}
	var projection *string
	if err := d.Pool.QueryRow(context.Background(), "SELECT to_regclass('todos_by_owner')::text").Scan(&projection); err != nil || projection != nil {
		t.Fatalf("usage errors created the example's projection: %v, %v", projection, err)
	}
}

// TestNoDatabase: without DATABASE_URL or --db every command but demo and
// db refuses in one line that says how to give one.
func TestNoDatabase(t *testing.T) {
	for _, args := range [][]string{{"status"}, {"up"}, {"migrate", "up"}, {"migrate", "status"}, {"checkpoint", "list"},
		{"checkpoint", "declare", "--partition", "p", "--name", "n", "--version", "2"}, {"gate", "--partition", "p", "--running", "1"},
		{"backfill", "--all", "--example", "todos"}} {
		r := invoke(t, args...).want(t, 2, args...)
		r.oneLineOn(t, "no database: set DATABASE_URL, pass --db URL, or start one with `gosync db`", args...)
	}
}

// TestBadDatabase: an unreachable server, a wrong password, a URL of another
// database, a database never migrated: one line each, exit 1 (2 for a URL
// that is not Postgres's).
func TestBadDatabase(t *testing.T) {
	d := pgtest.New(t)
	ctx := context.Background()
	if _, err := d.Pool.Exec(ctx, "CREATE ROLE cli_pw LOGIN PASSWORD 'right' SUPERUSER"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = d.Pool.Exec(ctx, "DROP ROLE IF EXISTS cli_pw") })
	cfg, err := pgx.ParseConfig(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	wrongPassword := strings.Replace(d.URL, "://"+cfg.User+"@", "://cli_pw:wrong@", 1)
	if wrongPassword == d.URL {
		t.Fatalf("cannot build a wrong-password URL from %s", d.URL)
	}
	empty := pgtest.NewEmpty(t)
	// A server that accepts the connection and never answers.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	for _, tc := range []struct {
		args    []string
		code    int
		mention string
	}{
		{[]string{"--db", "postgres://postgres@127.0.0.1:1/x?sslmode=disable", "status"}, 1, "cannot reach the database"},
		{[]string{"--db", wrongPassword, "status"}, 1, "password authentication failed"},
		{[]string{"--db", "postgres://u@" + silent.Addr().String() + "/x?sslmode=disable", "--connect-timeout", "300ms", "status"}, 1,
			"cannot reach the database: no answer within 300ms (--connect-timeout)"},
		{[]string{"--db", "mysql://root@localhost/app", "status"}, 2, "mysql:// is not a Postgres URL"},
		{[]string{"--db", d.URL, "status", "--partition", "nope"}, 1, `unknown partition "nope"`},
		{[]string{"--db", d.URL, "gate", "--partition", "nope", "--running", "1"}, 1, `unknown partition "nope"`},
		{[]string{"--db", d.URL, "checkpoint", "claim", "--partition", "p1", "--name", "x", "--version", "1"}, 1, "sync.storage.checkpoint_not_declared"},
		{[]string{"--db", d.URL, "demo"}, 1, "the demo needs an empty database"},
		{[]string{"--db", empty.URL, "migrate", "down"}, 0, ""},
	} {
		r := invoke(t, tc.args...).want(t, tc.code, tc.args...)
		if tc.code == 0 {
			if r.stdout != "nothing to roll back: the database is at version 0\n" {
				t.Errorf("migrate down at 0: %q", r.stdout)
			}
			continue
		}
		r.oneLineOn(t, tc.mention, tc.args...)
	}
	// A database never migrated: the same advice from every command.
	for _, args := range [][]string{{"status"}, {"checkpoint", "list"}, {"checkpoint", "list", "--partition", "p1"},
		{"checkpoint", "declare", "--partition", "p1", "--name", "n", "--version", "2"}, {"gate", "--partition", "p1", "--running", "1"},
		{"backfill", "--partition", "p1", "--version", "2", "--example", "todos"}, {"backfill", "--all", "--version", "2", "--example", "todos"}} {
		r := invoke(t, append([]string{"--db", empty.URL}, args...)...).want(t, 1, args...)
		r.oneLineOn(t, "run `gosync migrate up`", args...)
	}
}

// TestProgressLine: the backfill's progress fits an 80-column terminal at
// any size of log, and its percentage is the watermark's share of the log.
func TestProgressLine(t *testing.T) {
	for _, pr := range []gosyncpkg.Progress{
		{Watermark: 0, CoverageSeq: 0},
		{Watermark: 500, CoverageSeq: 1000, ObservedRows: 700, RowsPerSecond: 1234, ETA: 3 * time.Second},
		{Watermark: 1 << 60, CoverageSeq: 1<<61 + 1, ObservedRows: 1 << 62, RowsPerSecond: 1e12, ETA: 1e6 * time.Hour},
	} {
		for _, bar := range []bool{true, false} {
			line := progressLine(pr, bar)
			if len(line) > progressWidth || strings.ContainsAny(line, "\r\n") {
				t.Errorf("progress line of %d columns: %q", len(line), line)
			}
		}
	}
	if line := progressLine(gosyncpkg.Progress{Watermark: 500, CoverageSeq: 1000, ObservedRows: 700}, true); !strings.HasPrefix(line, "[") ||
		!strings.Contains(line, " 50.0%  seq 500/1000  700 rows") || len(line) != progressWidth {
		t.Errorf("progress line: %q", line)
	}
}

// TestUndoDeclare: a checkpoint declared by mistake closes the gate;
// `checkpoint remove` opens it again and keeps the fence; an activated
// checkpoint is refused in one line, exit 1.
func TestUndoDeclare(t *testing.T) {
	d := pgtest.New(t)
	cli := func(code int, args ...string) result {
		t.Helper()
		return invoke(t, append([]string{"--db", d.URL}, args...)...).want(t, code, args...)
	}
	if _, err := d.Pool.Exec(context.Background(), `INSERT INTO sync_schema_meta VALUES (1, 2, '{"todos": []}')`); err != nil {
		t.Fatal(err)
	}
	cli(0, "checkpoint", "declare", "--partition", "p1", "--name", "todos_by_ownr", "--version", "2")
	cli(3, "gate", "--partition", "p1", "--running", "2")
	r := cli(0, "checkpoint", "remove", "--partition", "p1", "--name", "todos_by_ownr")
	if r.stdout != "removed p1/todos_by_ownr (declared at schema version 2); the writer fence of p1 stays as it is (fences never go down)\n" {
		t.Fatalf("remove: %q", r.stdout)
	}
	cli(0, "gate", "--partition", "p1", "--running", "2")
	cli(0, "checkpoint", "declare", "--partition", "p1", "--name", "again", "--version", "2")
	golden(t, "checkpoint_remove", cli(0, "checkpoint", "remove", "--partition", "p1", "--name", "again", "--json"))
	cli(0, "checkpoint", "declare", "--partition", "p1", "--name", "proj", "--version", "2")
	cli(0, "checkpoint", "claim", "--partition", "p1", "--name", "proj", "--version", "2")
	cli(0, "checkpoint", "activate", "--partition", "p1", "--name", "proj", "--epoch", "1", "--watermark", "0", "--sources", "todos")
	args := []string{"checkpoint", "remove", "--partition", "p1", "--name", "proj"}
	cli(1, args...).oneLineOn(t, "sync.storage.checkpoint_activated: checkpoint 'proj' in partition 'p1' is activated", args...)
	cli(1, "checkpoint", "remove", "--partition", "p1", "--name", "nope").oneLineOn(t, "sync.storage.checkpoint_not_declared")
}

// TestStatusAsRoles: a sync_reader or sync_admin login (not the owner of
// the version table) reads the status, the migrations and the gate.
func TestStatusAsRoles(t *testing.T) {
	d := pgtest.New(t)
	ctx := context.Background()
	if _, err := d.Pool.Exec(ctx, "SELECT sync_declare_checkpoint('p1', 'proj', 2)"); err != nil {
		t.Fatal(err)
	}
	for _, group := range []string{"sync_reader", "sync_admin"} {
		login := d.Name + "_" + group
		if _, err := d.Pool.Exec(ctx, "CREATE ROLE "+pgx.Identifier{login}.Sanitize()+" LOGIN PASSWORD 'pw' IN ROLE "+group); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = d.Pool.Exec(ctx, "DROP ROLE "+pgx.Identifier{login}.Sanitize()) })
		u, err := url.Parse(d.URL)
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.UserPassword(login, "pw")
		for _, args := range [][]string{{"status"}, {"status", "--partition", "p1"}, {"migrate", "status"}, {"migrate", "version"},
			{"checkpoint", "list"}} {
			invoke(t, append([]string{"--db", u.String()}, args...)...).want(t, 0, append([]string{"as", group}, args...)...)
		}
		invoke(t, "--db", u.String(), "gate", "--partition", "p1", "--running", "2").want(t, 3, "as", group, "gate")
	}
}
