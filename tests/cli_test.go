package tests

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gosync/gosync/examples/todos"
	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

func TestCLIBackfill(t *testing.T) {
	t.Parallel()
	d, _ := backfillDB(t, 3000)
	r := gosyncCLI(t, "--db", d.URL, "backfill", "--example", "todos", "--partition", "p1", "--batch", "500")
	wantCode(t, r, 0, "backfill")
	if !strings.Contains(r.stdout, "activated p1/todos_by_owner at watermark 3000") || !strings.Contains(r.stdout, "rows/s") {
		t.Fatalf("backfill output:\n%s", r.stdout)
	}
	if diff := projectionDiff(t, d, -1); diff != "" {
		t.Fatalf("projection after the CLI backfill: %s", diff)
	}
}

// TestCLIExitCodes: the binary's exit statuses (the in-process tests in
// cmd/gosync cover each command's output): 0 help, 2 bad usage in one
// line, 3 gate closed, 1 failure.
func TestCLIExitCodes(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	if _, err := d.Pool.Exec(context.Background(), "SELECT sync_declare_checkpoint('p1', 'proj', 2)"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"checkpoint", "list", "--help"}, 0},
		{[]string{"--db", d.URL, "checkpoint", "list", "--epoch", "3"}, 2},
		{[]string{"checkpoint", "list"}, 2}, // no database
		{[]string{"--db", d.URL, "gate", "--partition", "p1", "--running", "2"}, 3},
		{[]string{"--db", d.URL, "checkpoint", "claim", "--partition", "p1", "--name", "x", "--version", "2"}, 1},
	} {
		r := gosyncCLI(t, tc.args...)
		wantCode(t, r, tc.code, strings.Join(tc.args, " "))
		if lines := strings.Count(r.stderr, "\n"); (tc.code == 1 || tc.code == 2) && (lines != 1 || !strings.HasPrefix(r.stderr, "gosync: ")) {
			t.Errorf("gosync %s: stderr %q, want one line", strings.Join(tc.args, " "), r.stderr)
		}
	}
}

// TestCLIDemoEmbedded: `gosync demo` with no database configured starts its
// own throwaway Postgres, runs the whole story, and removes the server.
func TestCLIDemoEmbedded(t *testing.T) {
	t.Parallel()
	r := gosyncCLI(t, "demo", "--commits", "3000")
	wantCode(t, r, 0, "demo")
	for _, want := range []string{"sync.storage.writer_fence_rejected", "push refused", "activated at watermark",
		"woken by NOTIFY", "push landed at seq", "Done in"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("demo output lacks %q:\n%s", want, r.stdout)
		}
	}
	url := strings.TrimSpace(r.stderr[strings.Index(r.stderr, "postgres://"):])
	if _, err := pgx.Connect(context.Background(), url); err == nil {
		t.Fatalf("the demo's throwaway Postgres still answers at %s", url)
	}
}

// TestCLIDBStopsOnInterrupt: `gosync db` serves until Ctrl-C, then removes
// the server.
func TestCLIDBStopsOnInterrupt(t *testing.T) {
	t.Parallel()
	bin, err := cliBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "db")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "DATABASE_URL=") {
		t.Fatalf("first line %q, %v", line, err)
	}
	url := strings.TrimSpace(strings.TrimPrefix(line, "DATABASE_URL="))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("the served database does not answer: %v", err)
	}
	conn.Close(ctx)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("gosync db after Ctrl-C: %v", err)
	}
	if _, err := pgx.Connect(ctx, url); err == nil {
		t.Fatal("the server still answers after Ctrl-C")
	}
}

// waitForWatermark waits (15s at most) until p1's todos_by_owner
// checkpoint has reached watermark: a backfill process is under way.
func waitForWatermark(t *testing.T, s *gosync.Store, watermark int64) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		cp, err := s.Checkpoint(context.Background(), "p1", "todos_by_owner")
		if err != nil {
			t.Fatal(err)
		}
		if cp.Watermark >= watermark {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the backfill made no progress: %+v", cp)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCLIBackfillKilledAndResumed: the backfill process is killed (SIGKILL)
// in the middle of its run; projection and watermark stay consistent, and a
// second run resumes from the stored watermark to an exact projection.
func TestCLIBackfillKilledAndResumed(t *testing.T) {
	t.Parallel()
	d, s := backfillDB(t, 4000)
	bin, err := cliBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--db", d.URL, "backfill", "--example", "todos", "--partition", "p1", "--batch", "100", "--pause", "20ms")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	waitForWatermark(t, s, 500)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	time.Sleep(200 * time.Millisecond) // let the server notice the dead connection and roll back
	cp, err := s.Checkpoint(ctx, "p1", "todos_by_owner")
	if err != nil {
		t.Fatal(err)
	}
	if cp.State != "backfilling" || cp.Watermark >= 4000 {
		t.Fatalf("after the kill: %+v", cp)
	}
	if diff := projectionDiff(t, d, cp.Watermark); diff != "" {
		t.Fatalf("projection and watermark %d disagree after the kill: %s", cp.Watermark, diff)
	}
	r := gosyncCLI(t, "--db", d.URL, "backfill", "--example", "todos", "--partition", "p1", "--batch", "1000")
	wantCode(t, r, 0, "backfill (resume)")
	if !strings.Contains(r.stdout, "owner epoch 2") {
		t.Fatalf("resume output:\n%s", r.stdout)
	}
	if diff := projectionDiff(t, d, -1); diff != "" {
		t.Fatalf("projection after resuming: %s", diff)
	}
}

// TestCLIBackfillInterrupted: Ctrl-C (SIGINT) stops the backfill after its
// current batch, which commits: one line says where it stopped (the stored
// watermark) and that re-running resumes; the re-run finishes with rows and
// percentage that agree; a third run says "already activated", exit 0.
func TestCLIBackfillInterrupted(t *testing.T) {
	t.Parallel()
	d, s := backfillDB(t, 4000)
	ctx := context.Background()
	bin, err := cliBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--db", d.URL, "backfill", "--example", "todos", "--partition", "p1", "--batch", "100", "--pause", "20ms")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitForWatermark(t, s, 500)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var exit *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("after Ctrl-C: %v, want exit 1", err)
	}
	cp, err := s.Checkpoint(ctx, "p1", "todos_by_owner")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("gosync: interrupted: p1/todos_by_owner stopped after its batch at watermark %d (%d rows); re-running the same command resumes from there\n",
		cp.Watermark, cp.ObservedRows)
	if stderr.String() != want || cp.State != gosync.StateBackfilling || cp.Watermark >= 4000 {
		t.Fatalf("after Ctrl-C: stderr %q, want %q; checkpoint %+v", stderr.String(), want, cp)
	}
	if diff := projectionDiff(t, d, cp.Watermark); diff != "" {
		t.Fatalf("projection and watermark %d disagree after Ctrl-C: %s", cp.Watermark, diff)
	}
	r := gosyncCLI(t, "--db", d.URL, "backfill", "--example", "todos", "--partition", "p1", "--batch", "1000")
	wantCode(t, r, 0, "backfill (resume)")
	final, err := s.Checkpoint(ctx, "p1", "todos_by_owner")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) < 2 || !strings.Contains(lines[len(lines)-2], fmt.Sprintf("100.0%%  seq 4000/4000  %d rows", final.ObservedRows)) ||
		lines[len(lines)-1] != fmt.Sprintf("activated p1/todos_by_owner at watermark 4000 (%d rows, owner epoch 2)", final.ObservedRows) {
		t.Fatalf("resume output:\n%s", r.stdout)
	}
	r = gosyncCLI(t, "--db", d.URL, "backfill", "--example", "todos", "--partition", "p1")
	wantCode(t, r, 0, "backfill (finished)")
	if r.stdout != fmt.Sprintf("p1/todos_by_owner already activated at watermark 4000 (%d rows): nothing to do\n", final.ObservedRows) {
		t.Fatalf("backfill of an activated checkpoint: %q", r.stdout)
	}
}

// TestCLIBackfillAllInterrupted: Ctrl-C stops a fleet backfill's workers
// after their current batches (committed, each projection consistent with
// its watermark); re-running resumes and activates every partition.
func TestCLIBackfillAllInterrupted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s, partitions := fleetDB(t, 4, 2000)
	bin, err := cliBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--db", d.URL, "backfill", "--example", "todos", "--all", "--workers", "2", "--batch", "100", "--pause", "20ms")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if progress := queryOne[int64](t, d.Pool, "SELECT coalesce(sum(watermark), 0) FROM sync_backfill_checkpoints"); progress >= 300 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the fleet backfill made no progress")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var exit *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &exit) || exit.ExitCode() != 1 ||
		!strings.HasPrefix(stderr.String(), "gosync: interrupted: the workers stopped after their current batches") || strings.Count(stderr.String(), "\n") != 1 {
		t.Fatalf("after Ctrl-C: %v, stderr %q", err, stderr.String())
	}
	pending := 0
	for _, p := range partitions {
		cp, err := s.Checkpoint(ctx, p, todos.Projection)
		if err != nil {
			t.Fatal(err)
		}
		if cp.State != gosync.StateActivated {
			pending++
		}
		if diff := projectionDiffIn(t, d, p, cp.Watermark); diff != "" {
			t.Fatalf("partition %s: projection and watermark %d disagree after Ctrl-C: %s", p, cp.Watermark, diff)
		}
	}
	if pending == 0 {
		t.Fatal("every partition was activated before Ctrl-C: the test stopped nothing")
	}
	// The interrupted workers' claims stay until their lease runs out (30 s
	// by default): a short lease lets the re-run take them over at once.
	r := gosyncCLI(t, "--db", d.URL, "backfill", "--example", "todos", "--all", "--workers", "2", "--lease", "2s")
	wantCode(t, r, 0, "backfill --all (resume)")
	for _, p := range partitions {
		if diff := projectionDiffIn(t, d, p, -1); diff != "" {
			t.Fatalf("partition %s after resuming: %s", p, diff)
		}
	}
}

// TestCLIBackfillFailures: a missing schema marker names --version; a
// backfill that fails before its first batch commits leaves no projection
// table it created behind.
func TestCLIBackfillFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	mustExec(t, d.Pool, "SELECT sync_declare_checkpoint('p1', 'todos_by_owner', 2)")
	r := gosyncCLI(t, "--db", d.URL, "backfill", "--example", "todos", "--partition", "p1")
	wantCode(t, r, 1, "backfill without a marker")
	if !strings.Contains(r.stderr, "pass --version N") {
		t.Fatalf("backfill without a marker: %q", r.stderr)
	}

	d, s := backfillDB(t, 100)
	mustExec(t, d.Pool, "DROP TABLE todos_by_owner")
	if _, err := s.PruneLog(ctx, "p1", 50); err != nil {
		t.Fatal(err)
	}
	r = gosyncCLI(t, "--db", d.URL, "backfill", "--example", "todos", "--partition", "p1")
	wantCode(t, r, 1, "backfill over a pruned log")
	if queryOne[bool](t, d.Pool, "SELECT to_regclass('todos_by_owner') IS NOT NULL") {
		t.Fatalf("a failed backfill left todos_by_owner behind; stderr %q", r.stderr)
	}
	if !strings.Contains(r.stderr, "pruned") {
		t.Fatalf("backfill over a pruned log: %q", r.stderr)
	}
}

// TestCLIBackfillAsBackfillRole: a sync_backfill login, which may not
// create tables, fills and activates a projection whose table exists (the
// application's DBA created it and granted the writes).
func TestCLIBackfillAsBackfillRole(t *testing.T) {
	d, _ := backfillDB(t, 1000)
	u, name := loginURL(t, d, "sync_backfill")
	if _, err := d.Pool.Exec(context.Background(), "GRANT SELECT, INSERT, UPDATE, DELETE ON todos_by_owner TO "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	r := gosyncCLI(t, "--db", u.String(), "backfill", "--example", "todos", "--partition", "p1")
	wantCode(t, r, 0, "backfill as sync_backfill")
	if !strings.Contains(r.stdout, "activated p1/todos_by_owner at watermark 1000") {
		t.Fatalf("backfill as sync_backfill:\n%s", r.stdout)
	}
	if diff := projectionDiff(t, d, -1); diff != "" {
		t.Fatalf("projection after the backfill as sync_backfill: %s", diff)
	}
}

// TestCLIBackfillAllWithSQLFile: a projection of the operator's own,
// backfilled in every partition by the CLI with its apply step in a SQL
// file (examples/backfill-sql), over a log of row codec payloads in two
// layouts (codecFleetDB: v1, some without writer_version, then v2 after
// upstream's bump), equals the titles written last.
func TestCLIBackfillAllWithSQLFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, partitions, want := codecFleetDB(t, 6, 400)
	mustExec(t, d.Pool, `CREATE TABLE todo_titles (partition text, todo_id text, title text, PRIMARY KEY (partition, todo_id));
		SELECT sync_install_checkpoints(array_agg(partition), array_agg('todo_titles'::text), 2) FROM sync_partitions`)
	r := gosyncCLI(t, "--db", d.URL, "backfill", "--all", "--workers", "3", "--batch", "150",
		"--name", "todo_titles", "--sources", "todos", "--apply", "../examples/backfill-sql/todo_titles.sql")
	wantCode(t, r, 0, "backfill --all --apply")
	if !strings.Contains(r.stdout, "6/6 partitions activated") || !strings.Contains(r.stdout, "done: 6 partitions activated by this process") {
		t.Fatalf("backfill --all output:\n%s", r.stdout)
	}
	for _, p := range partitions {
		rows, err := d.Pool.Query(ctx, "SELECT todo_id, title FROM todo_titles WHERE partition = $1", p)
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]string{}
		for rows.Next() {
			var id, title string
			if err := rows.Scan(&id, &title); err != nil {
				t.Fatal(err)
			}
			have[id] = title
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(have, want[p]) || len(have) == 0 {
			t.Errorf("partition %s: todo_titles %v, want %v", p, have, want[p])
		}
		cp, err := gosync.New(d.Pool).Checkpoint(ctx, p, "todo_titles")
		if err != nil || cp.State != gosync.StateActivated {
			t.Errorf("partition %s: checkpoint %+v, %v", p, cp, err)
		}
	}
	// Bad usage: --apply without --sources, or with the example's name.
	r = gosyncCLI(t, "--db", d.URL, "backfill", "--all", "--name", "todo_titles", "--apply", "x.sql")
	wantCode(t, r, 2, "backfill --apply without --sources")
	r = gosyncCLI(t, "--db", d.URL, "backfill", "--all", "--name", "todo_titles", "--sources", "todos", "--apply", "no-such-file.sql")
	wantCode(t, r, 2, "backfill --apply of a missing file")
}

// TestCLIDemoPartitions: `gosync demo --partitions N` tells the story on N
// partitions: one bump declares the projection in all of them, the fleet
// activates every one, and the summary ends at lag 0.
func TestCLIDemoPartitions(t *testing.T) {
	t.Parallel()
	d := pgtest.NewEmpty(t)
	r := gosyncCLI(t, "--db", d.URL, "demo", "--partitions", "40", "--commits", "2000", "--workers", "2")
	wantCode(t, r, 0, "demo --partitions 40")
	for _, want := range []string{"declares the todos_by_owner backfill in all 40 partitions", "40 checkpoints + writer fences",
		"v2 todos_by_owner declared: 40 partitions", "40 partitions activated", "v2 todos_by_owner activated: 40 partitions, max lag 0",
		"woken by NOTIFY", "push landed at seq"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("demo output lacks %q:\n%s", want, r.stdout)
		}
	}
}
