package tests

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// bumpToV2 starts the v2 schema bump in the background; opts tunes it.
func bumpToV2(ctx context.Context, s *gosync.Store, opts *gosync.SchemaChangeOptions) <-chan error {
	done := make(chan error, 1)
	go func() {
		done <- s.EnsureSchema(ctx, todosSchema(2), []gosync.CheckpointDeclaration{todosByOwner}, opts)
	}()
	return done
}

// TestSchemaBumpRetriesInsteadOfFreezingWriters: a long-running writer holds
// its partition lock. The bump's bounded lock wait times out and retries, so
// new writers keep going meanwhile; once the long writer commits, the bump
// completes. (With an unbounded LOCK TABLE, the new writer would queue
// behind the waiting bump and this test would time out.)
func TestSchemaBumpRetriesInsteadOfFreezingWriters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := v1DB(t)
	long := d.Conn(t)
	tx, err := long.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gosync.New(d.Pool).WithTx(tx).Push(ctx, "p1", todoCommit("long", 1), serverV1); err != nil {
		t.Fatal(err)
	}

	var retries atomic.Int32
	firstRetry := make(chan struct{})
	bump := bumpToV2(ctx, s, &gosync.SchemaChangeOptions{
		DDL: todosDDL(2).DDL, LockTimeout: 100 * time.Millisecond,
		OnRetry: func(attempt int, err error) {
			if retries.Add(1) == 1 {
				close(firstRetry)
			}
		},
	})
	within(t, "first retry of the bump", firstRetry)

	// New writers are not frozen while the bump keeps retrying.
	for i := 0; i < 3; i++ {
		if err := within(t, "a new writer during the bump", pushAsync(s, fmt.Sprintf("p%d", 2+i), fmt.Sprintf("new-%d", i), serverV1)); err != nil {
			t.Fatalf("new writer %d: %v", i, err)
		}
	}
	select {
	case err := <-bump:
		t.Fatalf("bump finished while the long writer held its lock: %v", err)
	default:
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := within(t, "the bump after the long writer committed", bump); err != nil {
		t.Fatalf("bump: %v", err)
	}
	if retries.Load() < 1 {
		t.Fatal("the bump never retried")
	}
	// The long writer's commit landed before the bump, at v1.
	if wv := queryOne[int64](t, d.Pool, "SELECT writer_version FROM sync_commits c JOIN sync_push_results r USING (partition, client_id, client_commit_id) WHERE client_commit_id = 'long'"); wv != 1 {
		t.Fatalf("long writer's commit: writer_version %d", wv)
	}
	t.Logf("bump retried %d times", retries.Load())
}

// TestSchemaBumpHoldsWritersNotReaders: while the bump holds the migration
// lock, pushes wait (and then either proceed at the new version or are
// refused by the gate), plain reads and authoritative reads go on.
func TestSchemaBumpHoldsWritersNotReaders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := v1DB(t)
	inLock, release := make(chan struct{}), make(chan struct{})
	bump := bumpToV2(ctx, s, &gosync.SchemaChangeOptions{DDL: func(ctx context.Context, tx pgx.Tx) error {
		close(inLock)
		<-release
		return todosDDL(2).DDL(ctx, tx)
	}})
	within(t, "the bump taking the lock", inLock)

	oldPush := pushAsync(s, "p2", "old", serverV1)
	newPush := pushAsync(s, "p3", "new", gosync.Server{SchemaVersion: 2, Declared: serverV2.Declared})
	waitForLockWaiters(t, d, 2)
	select {
	case err := <-oldPush:
		t.Fatalf("a push went through the held migration lock: %v", err)
	case err := <-newPush:
		t.Fatalf("a push went through the held migration lock: %v", err)
	default:
	}

	// Reads are never blocked by the bump.
	var n int
	if err := d.Pool.QueryRow(ctx, "SELECT count(*) FROM sync_partitions").Scan(&n); err != nil {
		t.Fatalf("plain read under the migration lock: %v", err)
	}
	readDone := make(chan error, 1)
	go func() {
		_, err := s.ReadAuthoritative(ctx, "p1", serverV1, func(context.Context, pgx.Tx) error { return nil })
		readDone <- err
	}()
	if err := within(t, "an authoritative read under the migration lock", readDone); err != nil {
		t.Fatalf("authoritative read under the lock: %v", err)
	}

	close(release)
	if err := within(t, "the bump", bump); err != nil {
		t.Fatal(err)
	}
	var nr *gosync.NotReadyError
	if err := within(t, "the v1 push", oldPush); !errors.As(err, &nr) || nr.Refusal.Kind != gosync.RefusalSchema {
		t.Fatalf("v1 push after the bump: %v, want a schema refusal", err)
	}
	if err := within(t, "the v2 push", newPush); err != nil {
		t.Fatalf("v2 push after the bump: %v", err)
	}
	if wv := queryOne[int64](t, d.Pool, "SELECT writer_version FROM sync_commits WHERE partition = 'p3'"); wv != 2 {
		t.Fatalf("v2 push stored writer_version %d", wv)
	}
	if c := countCommits(t, d.Pool, "p2"); c != 0 {
		t.Fatalf("the refused v1 push stored %d commits", c)
	}
}

// TestSchemaBumpNoDeadlock: 100 rounds of a schema bump racing random
// pushes at the old and the new version. Every round ends in time, no
// deadlock is detected, and the only refusals are the gate's.
func TestSchemaBumpNoDeadlock(t *testing.T) {
	t.Parallel()
	const rounds = 100
	ctx := context.Background()
	d := pgtest.New(t)
	s := gosync.New(d.Pool)
	schemaAt := func(v int64) gosync.Schema {
		return gosync.Schema{Version: v, Tables: []gosync.Table{{Name: "todos", Columns: []gosync.Column{{Name: "id", Type: gosync.TypeString}}}}}
	}
	if err := s.EnsureSchema(ctx, schemaAt(1), nil, nil); err != nil {
		t.Fatal(err)
	}
	var pushes, refusals atomic.Int64
	for r := int64(1); r <= rounds; r++ {
		next := r + 1
		decl := []gosync.CheckpointDeclaration{{Partition: fmt.Sprintf("cp%d", r), Name: "proj", SchemaVersion: next}}
		roundCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
			errs <- s.EnsureSchema(roundCtx, schemaAt(next), decl, &gosync.SchemaChangeOptions{LockTimeout: 20 * time.Millisecond})
		}()
		for w := 0; w < 3; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < 3; i++ {
					version := r + int64(rand.IntN(2))
					srv := gosync.Server{SchemaVersion: version, Declared: []gosync.CheckpointDeclaration{{Partition: fmt.Sprintf("cp%d", r), Name: "proj", SchemaVersion: version}}}
					_, err := s.Push(roundCtx, fmt.Sprintf("p%d", rand.IntN(3)), todoCommit(fmt.Sprintf("r%d-w%d-%d", r, w, i), 1), srv)
					var nr *gosync.NotReadyError
					switch {
					case err == nil:
						pushes.Add(1)
					case errors.As(err, &nr):
						refusals.Add(1)
					default:
						errs <- fmt.Errorf("push at v%d: %w", version, err)
						return
					}
					time.Sleep(time.Duration(rand.IntN(2)) * time.Millisecond)
				}
			}(w)
		}
		wg.Wait()
		cancel()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", r, err)
			}
		}
	}
	if version := schemaVersion(t, d.Pool); version != rounds+1 {
		t.Fatalf("final version %d", version)
	}
	if pushes.Load() == 0 || refusals.Load() == 0 {
		t.Fatalf("no interleaving: %d pushes, %d refusals", pushes.Load(), refusals.Load())
	}
	t.Logf("%d rounds: %d pushes, %d gate refusals", rounds, pushes.Load(), refusals.Load())
}
