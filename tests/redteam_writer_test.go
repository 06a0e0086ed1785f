package tests

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// The writer's red team (issue 17, sections 5 and 6): pushes whose snapshot
// predates a schema bump, and locks held by others (prepared transactions)
// that a bump meets.

// TestRedTeamStalePushBehindBump: a v1 push in REPEATABLE READ or
// SERIALIZABLE takes its snapshot, waits behind a v2 bump that declares
// nothing in its partition, then runs its gate: the old marker must not be
// served. Refused with 40001 (or the schema refusal), nothing stored. In
// READ COMMITTED the gate sees the new marker: the schema refusal.
func TestRedTeamStalePushBehindBump(t *testing.T) {
	ctx := context.Background()
	type path struct {
		name string
		// start begins what the push runs in (the snapshot is taken here,
		// before the bump); push runs it after the bump holds its lock.
		start func(t *testing.T, d *pgtest.DB, iso pgx.TxIsoLevel) (push func() error)
	}
	inTx := func(t *testing.T, d *pgtest.DB, iso pgx.TxIsoLevel, run func(tx pgx.Tx) error) func() error {
		writer := loginAs(t, d, "sync_writer", nil)
		tx, err := writer.BeginTx(ctx, pgx.TxOptions{IsoLevel: iso})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tx.Rollback(ctx) })
		mustExec(t, tx, "SELECT count(*) FROM sync_schema_meta")
		return func() error {
			if err := run(tx); err != nil {
				return err
			}
			return tx.Commit(ctx)
		}
	}
	paths := []path{
		{"sync_push", func(t *testing.T, d *pgtest.DB, iso pgx.TxIsoLevel) func() error {
			return inTx(t, d, iso, func(tx pgx.Tx) error {
				var refusal *string
				err := tx.QueryRow(ctx, `SELECT refusal FROM sync_push('p1', 1, NULL, '{}', '{}', '{}', 'c', 'stale', 'a', 0,
					'{todos}', '{r}', '{1}', '{1}', '{"{}"}', '{NULL}')`).Scan(&refusal)
				if err == nil && refusal != nil {
					return fmt.Errorf("refused: %s", *refusal)
				}
				return err
			})
		}},
		{"Store.WithTx(tx).Push", func(t *testing.T, d *pgtest.DB, iso pgx.TxIsoLevel) func() error {
			return inTx(t, d, iso, func(tx pgx.Tx) error {
				_, err := gosync.New(nil).WithTx(tx).Push(ctx, "p1", todoCommit("stale", 1), serverV1)
				return err
			})
		}},
		{"Store.Push on a pool whose default is this level", func(t *testing.T, d *pgtest.DB, iso pgx.TxIsoLevel) func() error {
			level := map[pgx.TxIsoLevel]string{pgx.RepeatableRead: "repeatable read", pgx.Serializable: "serializable", pgx.ReadCommitted: "read committed"}[iso]
			writer := loginAs(t, d, "sync_writer", map[string]string{"default_transaction_isolation": level})
			// One statement is its own transaction: its snapshot is taken
			// when it starts, before it waits for the partition lock.
			return func() error {
				_, err := gosync.New(writer).Push(ctx, "p1", todoCommit("stale", 1), serverV1)
				return err
			}
		}},
	}
	for _, iso := range []pgx.TxIsoLevel{pgx.RepeatableRead, pgx.Serializable, pgx.ReadCommitted} {
		for _, p := range paths {
			t.Run(fmt.Sprintf("%s/%s", iso, p.name), func(t *testing.T) {
				d, s := v1DB(t)
				if _, err := s.Push(ctx, "p1", todoCommit("before", 1), serverV1); err != nil {
					t.Fatal(err)
				}
				push := p.start(t, d, iso)
				bumped := make(chan error, 1)
				locked, release := make(chan struct{}), make(chan struct{})
				go func() { // v2 declares nothing: p1's fence and row stay as they are
					bumped <- s.EnsureSchema(ctx, todosSchema(2), nil, &gosync.SchemaChangeOptions{
						DDL: func(ctx context.Context, tx pgx.Tx) error {
							close(locked)
							<-release
							return todosDDL(2).DDL(ctx, tx)
						}})
				}()
				<-locked
				before := attackState(t, d)
				pushed := make(chan error, 1)
				go func() { pushed <- push() }()
				waitForLockWaiters(t, d, 1)
				close(release)
				if err := within(t, "bump", bumped); err != nil {
					t.Fatal(err)
				}
				err := within(t, "stale push", pushed)
				if !refusedAsStaleOrFenced(err) && (err == nil || !strings.HasPrefix(err.Error(), "refused: ")) {
					t.Fatalf("a push whose snapshot predates the bump was served with the old marker: %v", err)
				}
				if after := attackState(t, d); after != before {
					t.Fatalf("a refused push changed the database:\nbefore %s\nafter  %s", before, after)
				}
				if n := queryOne[int64](t, d.Pool, "SELECT count(*) FROM sync_commits WHERE writer_version < 2 AND client_commit_id = 'stale'"); n != 0 {
					t.Fatalf("%d commits stored at the old version after the bump", n)
				}
			})
		}
	}
}

// prepare runs stmts in a transaction of conn and prepares it as gid; the
// test's end rolls it back (as the superuser) if it is still there, since a
// prepared transaction outlives its session and would keep the test
// database from being dropped.
func prepare(t *testing.T, d *pgtest.DB, conn *pgx.Conn, gid string, stmts ...string) {
	t.Helper()
	t.Cleanup(func() { _, _ = d.Pool.Exec(context.Background(), "ROLLBACK PREPARED '"+gid+"'") })
	mustExec(t, conn, "BEGIN")
	for _, s := range stmts {
		mustExec(t, conn, s)
	}
	mustExec(t, conn, "PREPARE TRANSACTION '"+gid+"'")
}

// TestRedTeamPreparedPartitionLock: a writer prepares a transaction after a
// push, so the partition lock survives its session (and restarts); another
// holds a push open. The bump's wait is bounded, and its error names both
// blockers (the prepared transaction's gid, the session's pid, their roles)
// and what ends them; in Go a *LockBusyError. sync_admin cannot end the
// prepared transaction; its owner can, and then the bump goes through.
// Nothing changed meanwhile.
func TestRedTeamPreparedPartitionLock(t *testing.T) {
	ctx := context.Background()
	d, s := v1DB(t)
	writerURL, writerName := loginURL(t, d, "sync_writer")
	admin := loginAs(t, d, "sync_admin", nil)
	connect := func() *pgx.Conn {
		c, err := pgx.Connect(ctx, writerURL.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	// A push in REPEATABLE READ (it holds the partition lock and the marker
	// row), prepared.
	prepared := connect()
	mustExec(t, prepared, "SET default_transaction_isolation = 'repeatable read'")
	prepare(t, d, prepared, "held-by-writer",
		`SELECT refusal FROM sync_push('p1', 1, NULL, '{}', '{}', '{}', 'c', 'prepared', 'a', 0, '{todos}', '{r}', '{1}', '{1}', '{"{}"}', '{NULL}')`)
	prepared.Close(ctx) // the session is gone; its locks are not
	// An upstream push left open in a session.
	open := connect()
	var openPID uint32
	if err := open.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&openPID); err != nil {
		t.Fatal(err)
	}
	mustExec(t, open, "BEGIN")
	mustExec(t, open, `INSERT INTO sync_partitions(partition, max_commit_seq) VALUES ('p2', 0) ON CONFLICT (partition) DO NOTHING`)
	mustExec(t, open, `SELECT max_commit_seq FROM sync_partitions WHERE partition = 'p2' FOR UPDATE`)
	t.Cleanup(func() { _, _ = open.Exec(context.Background(), "ROLLBACK") })
	before := attackState(t, d) + fmt.Sprint(schemaVersion(t, d.Pool))

	// A DBA's bump at psql (no lock_timeout): bounded, and the error names both.
	bounded, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	_, err := admin.Exec(bounded, "SELECT sync_begin_schema_change()")
	var pg *pgconn.PgError
	if !errors.As(err, &pg) || pg.Code != "55P03" {
		t.Fatalf("a bump without lock_timeout behind a prepared transaction: %v (want 55P03 within its bound)", err)
	}
	for _, want := range []string{"'held-by-writer'", writerName, fmt.Sprintf("pid %d", openPID)} {
		if !strings.Contains(pg.Message, want) {
			t.Errorf("the bump's lock error does not name %s: %s", want, pg.Message)
		}
	}
	if !strings.Contains(pg.Hint, "ROLLBACK PREPARED 'held-by-writer'") {
		t.Errorf("the hint does not say how to end the prepared transaction: %s", pg.Hint)
	}

	// gosync's bump: retries within MaxWait, then a typed error naming them.
	err = s.EnsureSchema(ctx, todosSchema(2), nil, &gosync.SchemaChangeOptions{DDL: todosDDL(2).DDL,
		LockTimeout: 50 * time.Millisecond, MaxWait: 400 * time.Millisecond})
	var busy *gosync.LockBusyError
	if !errors.As(err, &busy) || !errors.Is(err, gosync.ErrLockBusy) {
		t.Fatalf("EnsureSchema behind a prepared transaction: %v (want *LockBusyError)", err)
	}
	want := []gosync.LockHolder{{PreparedGID: "held-by-writer", Role: writerName},
		{PID: int64(openPID), Role: writerName}}
	if len(busy.Blockers) != len(want) {
		t.Fatalf("blockers = %+v, want %+v", busy.Blockers, want)
	}
	for i, b := range busy.Blockers {
		if b.PID != want[i].PID || b.PreparedGID != want[i].PreparedGID || b.Role != want[i].Role || b.Modes == "" {
			t.Fatalf("blocker %d = %+v, want %+v", i, b, want[i])
		}
	}
	if !strings.Contains(err.Error(), "ROLLBACK PREPARED 'held-by-writer'") {
		t.Errorf("the error does not say how to end the prepared transaction: %v", err)
	}

	// sync_admin cannot end it (owner or superuser only).
	if _, err := admin.Exec(ctx, "ROLLBACK PREPARED 'held-by-writer'"); sqlState(err) != "42501" {
		t.Fatalf("sync_admin ended another role's prepared transaction: %v", err)
	}
	if after := attackState(t, d) + fmt.Sprint(schemaVersion(t, d.Pool)); after != before {
		t.Fatalf("the refused bumps changed the database:\nbefore %s\nafter  %s", before, after)
	}

	// Its owner ends it, the session ends its push: the bump goes through.
	mustExec(t, connect(), "ROLLBACK PREPARED 'held-by-writer'")
	mustExec(t, open, "ROLLBACK")
	if err := s.EnsureSchema(ctx, todosSchema(2), nil, todosDDL(2)); err != nil {
		t.Fatal(err)
	}
}

// TestSchemaChangeBlockersSeesOnlyOthers: the blocker list is empty for a
// bump's own locks and for plain reads, and lists a lock held elsewhere.
func TestSchemaChangeBlockersSeesOnlyOthers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	reader := loginAs(t, d, "sync_reader", nil)
	count := func(q querier) int {
		return queryOne[int](t, q, "SELECT count(*) FROM sync_schema_change_blockers()")
	}
	tx, err := d.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	mustExec(t, tx, "SELECT count(*) FROM sync_partitions") // AccessShare: no conflict
	if n := count(reader); n != 0 {
		t.Fatalf("a plain read is listed as a blocker (%d rows)", n)
	}
	mustExec(t, tx, "SELECT FROM sync_lock_partition('p1')")
	if n := count(tx); n != 0 {
		t.Fatalf("the caller's own lock is listed (%d rows)", n)
	}
	if n := count(reader); n != 1 {
		t.Fatalf("a partition lock held elsewhere: %d rows, want 1", n)
	}
}
