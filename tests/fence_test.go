package tests

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

const fenceMessage = "sync.storage.writer_fence_rejected"

func TestWriterFence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)

	// No fence row: every writer_version is accepted, NULL included.
	for _, version := range []*int64{nil, v(0), v(1), v(100)} {
		if _, err := oldWriterCommit(ctx, d.Pool, "P", version); err != nil {
			t.Fatalf("no fence: writer_version %v rejected: %v", version, err)
		}
	}

	mustExec(t, d.Pool, "INSERT INTO sync_writer_fence VALUES ('P', 7)")
	before := countCommits(t, d.Pool, "P")
	for _, tc := range []struct {
		version *int64
		offered string
	}{{nil, "NULL"}, {v(6), "6"}, {v(0), "0"}} {
		_, err := oldWriterCommit(ctx, d.Pool, "P", tc.version)
		if !errors.Is(err, gosync.ErrWriterFenceRejected) {
			t.Fatalf("fence 7, writer_version %s: err = %v, want ErrWriterFenceRejected", tc.offered, err)
		}
		var pg *pgconn.PgError
		if !errors.As(err, &pg) || pg.Message != fenceMessage {
			t.Fatalf("message = %v, want exactly %q", err, fenceMessage)
		}
		wantDetail := `partition 'P' requires writer_version >= 7; the commit offered ` + tc.offered
		if pg.Detail != wantDetail {
			t.Fatalf("detail = %q, want %q", pg.Detail, wantDetail)
		}
	}
	if got := countCommits(t, d.Pool, "P"); got != before {
		t.Fatalf("rejected inserts left %d commits behind", got-before)
	}
	if seq := maxCommitSeq(t, d.Pool, "P"); seq != before {
		t.Fatalf("rejected inserts moved max_commit_seq to %d, want %d", seq, before)
	}
	for _, version := range []int64{7, 8} {
		if _, err := oldWriterCommit(ctx, d.Pool, "P", v(version)); err != nil {
			t.Fatalf("fence 7, writer_version %d rejected: %v", version, err)
		}
	}
	// Another partition has no fence row and is unaffected.
	if _, err := oldWriterCommit(ctx, d.Pool, "Q", nil); err != nil {
		t.Fatalf("partition Q rejected: %v", err)
	}
}

// TestWriterFenceRawInsert: the fence holds for writers that never go
// through gosync: a plain SQL string over the simple protocol, and psql.
func TestWriterFenceRawInsert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	mustExec(t, d.Pool, "INSERT INTO sync_writer_fence VALUES ('P', 7)")
	raw := `INSERT INTO sync_commits (partition, commit_seq, client_id, client_commit_id, actor_id, created_at_ms)
	        VALUES ('P', 1, 'old', 'old-1', 'a', 1)`
	_, err := d.Pool.Exec(ctx, raw, pgx.QueryExecModeSimpleProtocol)
	if !errors.Is(gosync.MapError(err), gosync.ErrWriterFenceRejected) {
		t.Fatalf("raw insert: err = %v, want %s", err, fenceMessage)
	}

	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Fatalf("psql not found (install postgresql-client): %v", err)
	}
	out, err := exec.Command(psql, d.URL, "-v", "ON_ERROR_STOP=1", "-c", raw).CombinedOutput()
	if err == nil {
		t.Fatalf("psql insert below the fence succeeded: %s", out)
	}
	for _, want := range []string{"ERROR:  " + fenceMessage, "DETAIL:  partition 'P' requires writer_version >= 7; the commit offered NULL"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("psql output lacks %q:\n%s", want, out)
		}
	}
	if n := countCommits(t, d.Pool, "P"); n != 0 {
		t.Fatalf("raw inserts below the fence stored %d commits", n)
	}
}

// TestWriterFenceRollbackLeavesNothing: a transaction that appended a
// commit with its change and change scope, then hit the fence with a second
// commit, leaves none of them after rollback.
func TestWriterFenceRollbackLeavesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	mustExec(t, d.Pool, "INSERT INTO sync_writer_fence VALUES ('P', 7)")
	tx, err := d.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seq, err := oldWriterCommit(ctx, tx, "P", v(7))
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`INSERT INTO sync_changes VALUES ('P', $1, 0, 'todos', 'r1', 1, 1, '{}', NULL)`,
		`INSERT INTO sync_change_scopes VALUES ('P', 'todos', 'owner', 'u1', $1)`,
	} {
		mustExec(t, tx, stmt, seq)
	}
	if _, err := oldWriterCommit(ctx, tx, "P", v(6)); !errors.Is(err, gosync.ErrWriterFenceRejected) {
		t.Fatalf("err = %v, want ErrWriterFenceRejected", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := d.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM sync_commits) + (SELECT count(*) FROM sync_changes)
	       + (SELECT count(*) FROM sync_change_scopes) + (SELECT count(*) FROM sync_partitions)`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("rolled-back fenced transaction left %d rows", n)
	}
}
