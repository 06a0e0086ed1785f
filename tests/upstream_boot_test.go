package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// gosync's rules survive an upstream boot (issue 18, deliverable 5): an
// upstream 0.23 server re-creates syncular_writer_fence() with its own body
// at every start and drops and re-creates the trigger
// sync_commits_writer_fence. Before migration 00025 that body was where
// gosync's head rule lived, so a boot switched it off; now the fence and
// the head rule are sync_commits_writer_guard's, which a boot leaves alone.

// upstreamBoot replays an upstream 0.23 server's start-up statements
// (testdata/upstream_0_23_additions.sql without its fixture row) as the
// owner, which its login must be a member of.
func upstreamBoot(t testing.TB, d *pgtest.DB) {
	t.Helper()
	raw, err := os.ReadFile("testdata/upstream_0_23_additions.sql")
	if err != nil {
		t.Fatal(err)
	}
	var boot []string
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "INSERT INTO sync_writer_fence") {
			boot = append(boot, line)
		}
	}
	mustExec(t, d.Pool, strings.Join(boot, "\n"))
	if !strings.Contains(queryOne[string](t, d.Pool, "SELECT prosrc FROM pg_proc WHERE proname = 'syncular_writer_fence'"), "IF EXISTS (SELECT 1 FROM sync_writer_fence") {
		t.Fatal("the boot did not install upstream's fence body")
	}
}

// headAttacks are the red-team head attacks that depend on the commit
// trigger, each a writer's raw INSERT at a seq: the empty seq below the
// head, the head nobody allocated in this transaction, far ahead.
var headAttacks = []struct {
	name string
	seq  func(empty, head int64) int64
}{
	{"fill the empty seq below the head", func(empty, head int64) int64 { return empty }},
	{"a commit at the head without allocating", func(empty, head int64) int64 { return head }},
	{"a commit far ahead", func(empty, head int64) int64 { return head + 100 }},
}

const rawCommit = `INSERT INTO sync_commits VALUES ($1, $2, 'c', 'late', 'a', 0, 9)`

// TestUpstreamBootKeepsGosyncRules: after upstream's boot statements (twice:
// it runs them at every start) on a gosync database, under every isolation
// level, the fence refuses old writers, each head attack is refused and
// changes nothing, and upstream's own pushes (and gosync's) still land. The
// audit says the fence function has upstream's body (info, nothing fails);
// dropping gosync's trigger (a control) lets the attack in, so the guard is
// what holds. migrate up restores gosync's body, and says so.
func TestUpstreamBootKeepsGosyncRules(t *testing.T) {
	ctx := context.Background()
	d := pgtest.New(t)
	writer := loginAs(t, d, "sync_writer", nil)
	both, _ := multiLogin(t, d, "adminwriter", "sync_admin", "sync_writer")
	upstreamBoot(t, d)
	upstreamBoot(t, d)

	if f := failingRows(t, d.Pool); len(f) != 0 {
		t.Fatalf("audit after an upstream boot: failing\n%s", joinRows(f))
	}
	var saw int
	for _, r := range readAudit(t, d.Pool) {
		if r.Object != nil && *r.Object == "syncular_writer_fence()" {
			if r.Severity != "info" || !strings.Contains(r.Detail, "upstream's body") {
				t.Errorf("audit row for the fence function: %s", r)
			}
			saw++
		}
	}
	if saw != 2 { // whose body, and the definition check
		t.Errorf("%d audit rows name syncular_writer_fence(), want 2", saw)
	}
	if body, err := gosync.New(writer).FenceFunction(ctx); err != nil || body != gosync.FenceBodyUpstream {
		t.Fatalf("FenceFunction after the boot: %q, %v", body, err)
	}

	for i, iso := range isoLevels {
		t.Run(string(iso), func(t *testing.T) {
			// The fence: a declared partition refuses old and unversioned writers.
			fenced := fmt.Sprintf("f%d", i)
			seedPartition(t, writer, fenced)
			mustExec(t, d.Pool, `SELECT sync_declare_checkpoint($1, 'proj', 2)`, fenced)
			for _, version := range []*int64{nil, v(1)} {
				before := attackState(t, d)
				err := pgx.BeginTxFunc(ctx, writer, pgx.TxOptions{IsoLevel: iso}, func(tx pgx.Tx) error {
					_, err := upstreamPushTx(ctx, tx, fenced, "old", version)
					return err
				})
				if !errors.Is(gosync.MapError(err), gosync.ErrWriterFenceRejected) {
					t.Fatalf("an old writer's push after the boot: %v, want writer_fence_rejected", err)
				}
				if after := attackState(t, d); after != before {
					t.Fatalf("a refused push changed the database:\nbefore %s\nafter  %s", before, after)
				}
			}
			// Upstream's push at the fence, and gosync's, still land.
			if err := pgx.BeginTxFunc(ctx, writer, pgx.TxOptions{IsoLevel: iso}, func(tx pgx.Tx) error {
				_, err := upstreamPushTx(ctx, tx, fenced, "new", v(2))
				return err
			}); err != nil {
				t.Fatalf("upstream's push at the fence: %v", err)
			}
			if seq := mustPush(t, writer, fenced, "todos", 2); seq != 3 {
				t.Fatalf("gosync's push at %d, want 3", seq)
			}

			// The head rule: a writer's raw attacks, and a fill after the
			// owner's touch (a prune by a login that is admin and writer).
			partition := fmt.Sprintf("h%d", i)
			seedCommits(t, writer, partition, 1)
			hole := makeHole(t, writer, partition)
			seedCommits(t, writer, partition, 1)
			empty := makeHole(t, writer, partition)
			for _, a := range headAttacks {
				before := attackState(t, d)
				err := pgx.BeginTxFunc(ctx, writer, pgx.TxOptions{IsoLevel: iso}, func(tx pgx.Tx) error {
					_, err := tx.Exec(ctx, rawCommit, partition, a.seq(hole, empty))
					return err
				})
				refusedWith(t, err, "sync.storage.commit_not_at_head")
				if after := attackState(t, d); after != before {
					t.Fatalf("%s: a refused attack changed the database:\nbefore %s\nafter  %s", a.name, before, after)
				}
			}
			mustExec(t, d.Pool, `SELECT sync_declare_checkpoint($1, 'proj', 1)`, partition)
			before := attackState(t, d)
			err := pgx.BeginTxFunc(ctx, both, pgx.TxOptions{IsoLevel: iso}, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, `SELECT sync_prune_log($1, 1)`, partition); err != nil {
					return err
				}
				return lateCommit(ctx, tx, partition, empty)
			})
			refusedWith(t, err, "sync.storage.commit_not_at_head")
			if after := attackState(t, d); after != before {
				t.Fatalf("a refused fill changed the database:\nbefore %s\nafter  %s", before, after)
			}

			// Control: without gosync's trigger, upstream's body alone lets
			// the fill in (rolled back).
			tx, err := d.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: iso})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			mustExec(t, tx, "DROP TRIGGER sync_commits_writer_guard ON sync_commits")
			if _, err := tx.Exec(ctx, rawCommit, partition, hole); err != nil {
				t.Fatalf("control: without gosync's trigger the fill should pass (upstream's body has no head rule): %v", err)
			}
			_ = tx.Rollback(ctx)
		})
	}

	// EnsureReady starts over upstream's body; migrate up puts gosync's back.
	if err := gosync.New(writer).EnsureReady(ctx, gosync.ReadyConfig{Schema: todosSchema(1)}); err != nil &&
		errors.Is(err, gosync.ErrFenceGuardMissing) {
		t.Fatalf("EnsureReady after an upstream boot: %v", err)
	}
	m, err := gosync.NewMigrator(ctx, d.Pool)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if got := m.RestoredFenceBody(); got != gosync.FenceBodyUpstream {
		t.Fatalf("migrate up restored %q, want it to report upstream's body", got)
	}
	if body, err := m.FenceFunction(ctx); err != nil || body != gosync.FenceBodyGosync {
		t.Fatalf("after migrate up the fence function has %q (%v)", body, err)
	}
	if _, err := m.Up(ctx); err != nil || m.RestoredFenceBody() != gosync.FenceBodyNone {
		t.Fatalf("a second migrate up restored %q (%v)", m.RestoredFenceBody(), err)
	}
	if f := failingRows(t, d.Pool); len(f) != 0 {
		t.Fatalf("audit after migrate up: failing\n%s", joinRows(f))
	}
	for _, r := range readAudit(t, d.Pool) {
		if r.Check == "fence function syncular_writer_fence" && (r.Severity != "ok" || !strings.Contains(r.Detail, "gosync's body")) {
			t.Errorf("after migrate up: %s", r)
		}
	}
}

// TestEnsureReadyRefusesWithoutGuard: with gosync's trigger disabled or
// dropped (the owner can), the fence and the head rule are off: EnsureReady
// refuses to start (storage_migration, ErrFenceGuardMissing), and the audit
// fails it.
func TestEnsureReadyRefusesWithoutGuard(t *testing.T) {
	ctx := context.Background()
	d := pgtest.New(t)
	s := gosync.New(d.Pool)
	cfg := gosync.ReadyConfig{Schema: todosSchema(1)}
	if err := s.EnsureReady(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	for _, off := range []string{
		"ALTER TABLE sync_commits DISABLE TRIGGER sync_commits_writer_guard",
		"DROP TRIGGER sync_commits_writer_guard ON sync_commits",
	} {
		t.Run(off, func(t *testing.T) {
			tx, err := d.Pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			mustExec(t, tx, off)
			err = gosync.New(d.Pool).WithTx(tx).EnsureReady(ctx, cfg)
			var re *gosync.ReadinessError
			if !errors.Is(err, gosync.ErrFenceGuardMissing) || !errors.As(err, &re) || re.Phase != gosync.PhaseStorageMigration {
				t.Fatalf("EnsureReady without gosync's trigger: %v", err)
			}
			failing := joinRows(failingRows(t, tx))
			if !strings.Contains(failing, "head-only triggers present and enabled") || !strings.Contains(failing, "sync_commits_writer_guard") {
				t.Fatalf("audit without gosync's trigger: failing\n%s", failing)
			}
		})
	}
}
