package tests

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gosync/gosync/gosync"
)

func TestPushAppendsCommitChangesAndScopes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := readyDB(t)
	res, err := s.Push(ctx, "p2", todoCommit("cc1", 3), serverV2)
	if err != nil || res != (gosync.PushResult{CommitSeq: 1}) {
		t.Fatalf("push = %+v, %v", res, err)
	}
	var writerVersion int64
	var changes, scopes int
	if err := d.Pool.QueryRow(ctx, `SELECT (SELECT writer_version FROM sync_commits WHERE partition = 'p2'),
		(SELECT count(*) FROM sync_changes WHERE partition = 'p2' AND commit_seq = 1),
		(SELECT count(*) FROM sync_change_scopes WHERE partition = 'p2' AND commit_seq = 1)`).Scan(&writerVersion, &changes, &scopes); err != nil {
		t.Fatal(err)
	}
	if writerVersion != 2 || changes != 3 || scopes != 1 {
		t.Fatalf("stored writer_version %d, %d changes, %d scopes; want 2, 3, 1", writerVersion, changes, scopes)
	}
	again, err := s.Push(ctx, "p2", todoCommit("cc1", 3), serverV2)
	if err != nil || again != (gosync.PushResult{CommitSeq: 1, Replayed: true}) {
		t.Fatalf("replay = %+v, %v", again, err)
	}
	next, err := s.Push(ctx, "p2", todoCommit("cc2", 1), serverV2)
	if err != nil || next.CommitSeq != 2 {
		t.Fatalf("next push = %+v, %v", next, err)
	}
}

// TestPushRefusedByGate: each refusal kind rolls the push back whole (the
// partition row sync_push's lock inserts included).
func TestPushRefusedByGate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := readyDB(t)
	if _, err := s.TouchPartition(ctx, "p2"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		partition string
		srv       gosync.Server
		details   map[string]any
	}{
		{"schema", "p2", gosync.Server{SchemaVersion: 1}, map[string]any{"storedSchemaVersion": int64(2), "runningSchemaVersion": int64(1)}},
		{"schema, in a partition with no row yet", "p9", gosync.Server{SchemaVersion: 1}, map[string]any{"storedSchemaVersion": int64(2), "runningSchemaVersion": int64(1)}},
		{"epoch", "p2", gosync.Server{SchemaVersion: 2, Declared: serverV2.Declared, ExpectedEpoch: "not-the-epoch"}, map[string]any{"logEpochChanged": true}},
		{"checkpoint of this partition", "p1", serverV2, map[string]any{"partition": "p1", "projection": "todos_by_owner"}},
		{"undeclared checkpoint elsewhere", "p2", gosync.Server{SchemaVersion: 2}, map[string]any{"partition": "p1", "projection": "todos_by_owner"}},
	} {
		before := logState(t, d)
		_, err := s.Push(ctx, tc.partition, todoCommit("refused-"+tc.name, 2), tc.srv)
		var nr *gosync.NotReadyError
		if !errors.As(err, &nr) || !errors.Is(err, gosync.ErrSchemaNotReady) {
			t.Fatalf("%s: err = %v, want a *NotReadyError", tc.name, err)
		}
		if !reflect.DeepEqual(nr.Details(), tc.details) {
			t.Errorf("%s: details = %v, want %v", tc.name, nr.Details(), tc.details)
		}
		if err.Error() != "sync.schema_not_ready: server schema is not ready for this request" {
			t.Errorf("%s: message %q names more than it should", tc.name, err)
		}
		if after := logState(t, d); after != before {
			t.Errorf("%s: a refused push changed the log:\nbefore %s\nafter  %s", tc.name, before, after)
		}
	}
}

// TestPushConcurrentReplays: 16 connections push the same client commit at
// once; the partition lock serializes them and exactly one appends.
func TestPushConcurrentReplays(t *testing.T) {
	t.Parallel()
	const replays = 16
	ctx := context.Background()
	d, s := readyDB(t)
	results := make([]gosync.PushResult, replays)
	errs := make([]error, replays)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < replays; i++ {
		conn := d.Conn(t)
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			errs[i] = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				var err error
				results[i], err = s.WithTx(tx).Push(ctx, "p2", todoCommit("same", 2), serverV2)
				return err
			})
		}(i)
	}
	close(start)
	wg.Wait()
	appended := 0
	for i := range results {
		if errs[i] != nil {
			t.Fatalf("replay %d: %v", i, errs[i])
		}
		if results[i].CommitSeq != 1 {
			t.Fatalf("replay %d landed at seq %d", i, results[i].CommitSeq)
		}
		if !results[i].Replayed {
			appended++
		}
	}
	var commits, changes int
	if err := d.Pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM sync_commits), (SELECT count(*) FROM sync_changes)").Scan(&commits, &changes); err != nil {
		t.Fatal(err)
	}
	if appended != 1 || commits != 1 || changes != 2 {
		t.Fatalf("%d pushes appended, %d commits and %d changes stored; want 1, 1, 2", appended, commits, changes)
	}
}

// TestReadAuthoritativeSnapshot: a read whose snapshot began before a schema
// bump sees the old marker and the old data, with the gate of that same
// snapshot; a read that starts after the bump is refused by the gate.
func TestReadAuthoritativeSnapshot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := v1DB(t)
	v1 := gosync.Server{SchemaVersion: 1}
	if _, err := s.Push(ctx, "p1", todoCommit("before", 1), v1); err != nil {
		t.Fatal(err)
	}

	inRead, bumped := make(chan struct{}), make(chan error, 1)
	go func() {
		<-inRead
		// A v2 server bumps the schema and commits while the read's snapshot
		// is open; plain reads hold no lock the bump waits for.
		err := s.EnsureSchema(ctx, todosSchema(2), []gosync.CheckpointDeclaration{todosByOwner}, todosDDL(2))
		if err == nil {
			_, err = oldWriterCommit(ctx, d.Pool, "p1", v(2))
		}
		bumped <- err
	}()
	var seenVersion, seenCommits int64
	cursor, err := s.ReadAuthoritative(ctx, "p1", v1, func(ctx context.Context, tx pgx.Tx) error {
		close(inRead)
		if err := <-bumped; err != nil {
			return err
		}
		return tx.QueryRow(ctx, "SELECT (SELECT schema_version FROM sync_schema_meta), (SELECT count(*) FROM sync_commits)").Scan(&seenVersion, &seenCommits)
	})
	if err != nil {
		t.Fatal(err)
	}
	if seenVersion != 1 || seenCommits != 1 || cursor != 1 {
		t.Fatalf("read in the old snapshot saw version %d, %d commits, cursor %d; want 1, 1, 1", seenVersion, seenCommits, cursor)
	}

	_, err = s.ReadAuthoritative(ctx, "p1", v1, func(context.Context, pgx.Tx) error { return nil })
	var nr *gosync.NotReadyError
	if !errors.As(err, &nr) || nr.Refusal.Kind != gosync.RefusalSchema {
		t.Fatalf("v1 read after the bump: %v, want a schema refusal", err)
	}
	v2 := gosync.Server{SchemaVersion: 2, Declared: serverV2.Declared}
	if _, err := s.ReadAuthoritative(ctx, "p2", v2, func(context.Context, pgx.Tx) error { return nil }); err != nil {
		t.Fatalf("v2 read of another partition: %v", err)
	}
	if cursor, err := s.ReadAuthoritative(ctx, "p1", v2, func(context.Context, pgx.Tx) error { return nil }); !errors.As(err, &nr) || cursor != 0 {
		t.Fatalf("v2 read of p1 while todos_by_owner backfills: cursor %d, %v; want a refusal", cursor, err)
	}
}

// TestPushGateReadAfterTheLock: a push that waits for the partition lock
// applies the refusal rule to what committed while it waited. Another
// connection holds p2's lock and declares a checkpoint of p2 in the same
// transaction; the push, started meanwhile, is refused once the lock frees.
// A gate read with the push statement's own starting snapshot would have
// let it through.
func TestPushGateReadAfterTheLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := readyDB(t)
	if _, err := s.Push(ctx, "p2", todoCommit("first", 1), serverV2); err != nil {
		t.Fatal(err)
	}
	holder, err := d.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	mustExec(t, holder, "SELECT sync_lock_partition('p2'); SELECT sync_declare_checkpoint('p2', 'late_projection', 2)")
	done := pushAsync(s, "p2", "waiting", serverV2)
	waitForLockWaiters(t, d, 1)
	if err := holder.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	err = <-done
	var nr *gosync.NotReadyError
	if !errors.As(err, &nr) || nr.Refusal.Checkpoint != (gosync.CheckpointRef{Partition: "p2", Name: "late_projection"}) {
		t.Fatalf("push after waiting for the lock: %v, want a refusal for p2/late_projection", err)
	}
}
