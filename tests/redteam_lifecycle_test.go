package tests

// Red team, issue 17 sections 4, 5 (the prune race) and 7: the checkpoint
// lifecycle's clock, epochs, sources, leases, the '' checkpoint and an
// apply that ends its batch's transaction. Each attack runs with the
// documented roles and asserts that a refusal changed nothing.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gosync/gosync/examples/todos"
	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// storeTables writes the schema marker as the superuser (an existing one
// keeps its version), its layouts listing tables: activation checks its
// sources against them.
func storeTables(t *testing.T, d *pgtest.DB, version int64, tables ...string) {
	t.Helper()
	layouts := map[string][]any{}
	for _, tb := range tables {
		layouts[tb] = []any{}
	}
	j, err := json.Marshal(layouts)
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, d.Pool, `INSERT INTO sync_schema_meta VALUES (1, $1, $2)
		ON CONFLICT (id) DO UPDATE SET layouts = EXCLUDED.layouts`, version, string(j))
}

// wantCode fails t unless err is a database error with SQLSTATE code whose
// message contains each of words.
func wantSQLState(t *testing.T, what string, err error, code string, words ...string) {
	t.Helper()
	var pg *pgconn.PgError
	if !errors.As(err, &pg) || pg.Code != code {
		t.Fatalf("%s: %v, want SQLSTATE %s", what, err, code)
	}
	for _, w := range words {
		if !strings.Contains(pg.Message+" "+pg.Detail, w) {
			t.Fatalf("%s: %q does not name %q", what, pg.Message, w)
		}
	}
}

// TestRedTeamClockBounds: every now_ms argument, from the roles that may
// call it, far in the future, near 2^63 or negative, is refused (22023,
// naming now_ms and the bound) and changes nothing; a stamp within the
// bound is accepted. A stamp already stored out of range (adopted data)
// breaks neither the status views nor the fleet's lease.
func TestRedTeamClockBounds(t *testing.T) {
	ctx := context.Background()
	d := pgtest.New(t)
	storeTables(t, d, 2, "todos")
	admin := loginAs(t, d, "sync_admin", nil)
	worker := loginAs(t, d, "sync_backfill", nil)
	writer := loginAs(t, d, "sync_writer", nil)
	mustExec(t, d.Pool, `SELECT sync_declare_checkpoint('p1', 'proj', 2); SELECT sync_declare_checkpoint('p2', 'proj', 2)`)
	mustExec(t, worker, `SELECT sync_claim_checkpoint('p2', 'proj', 2)`)

	calls := []struct {
		who  string
		pool execer
		sql  string
	}{
		{"declare", admin, `SELECT sync_declare_checkpoint('p3', 'proj', 2, $1)`},
		{"install one", admin, `SELECT sync_install_checkpoint('p3', 'proj', 2, $1)`},
		{"install many", admin, `SELECT sync_install_checkpoints('{p3,p4}', '{proj,proj}', 2, $1)`},
		{"claim", worker, `SELECT sync_claim_checkpoint('p1', 'proj', 2, $1)`},
		{"claim next", worker, `SELECT sync_claim_next_checkpoint('proj', 2, 60000, $1)`},
		{"advance", worker, `SELECT sync_advance_checkpoint('p2', 'proj', 1, 0, 0, $1)`},
		{"activate", worker, `SELECT sync_activate_checkpoint('p2', 'proj', 1, 0, '{todos}', $1)`},
		{"touch partition", writer, `SELECT sync_touch_partition('p1', NULL, $1)`},
		{"rotate log epoch", admin, `SELECT sync_rotate_log_epoch('p1', NULL, $1)`},
	}
	for _, stamp := range []string{"db + 1 year", "2^63 - 1", "-1", "db - 10 minutes"} {
		var value int64
		switch stamp {
		case "db + 1 year":
			value = queryOne[int64](t, d.Pool, `SELECT sync_now_ms() + 365 * 86400000::bigint`)
		case "2^63 - 1":
			value = 1<<63 - 1
		case "-1":
			value = -1
		default:
			value = queryOne[int64](t, d.Pool, `SELECT sync_now_ms() - 600000`)
		}
		for _, c := range calls {
			before := attackState(t, d)
			_, err := c.pool.Exec(ctx, c.sql, value)
			wantSQLState(t, fmt.Sprintf("%s at now_ms %s", c.who, stamp), err, "22023", "now_ms", "300000 ms")
			if after := attackState(t, d); after != before {
				t.Fatalf("%s at now_ms %s changed the state:\nbefore %s\nafter  %s", c.who, stamp, before, after)
			}
		}
	}
	// A caller's clock a few seconds off is fine.
	near := queryOne[int64](t, d.Pool, `SELECT sync_now_ms() + 4000`)
	if got := queryOne[int64](t, admin, `SELECT updated_at_ms FROM sync_declare_checkpoint('p5', 'proj', 2, $1)`, near); got != near {
		t.Fatalf("a stamp 4 s ahead stored %d, want %d", got, near)
	}

	// Adopted data: a backfilling row stamped near 2^63 by an older server.
	mustExec(t, d.Pool, `UPDATE sync_backfill_checkpoints SET updated_at_ms = 9223372036854775807 WHERE partition = 'p2'`)
	reader := gosync.New(loginAs(t, d, "sync_reader", nil))
	if _, err := reader.BarrierSummary(ctx); err != nil {
		t.Fatalf("sync_barrier_summary with a stamp near 2^63: %v", err)
	}
	if _, err := reader.BarrierStatus(ctx, gosync.StatusFilter{}); err != nil {
		t.Fatalf("sync_barrier_status with a stamp near 2^63: %v", err)
	}
	mustExec(t, d.Pool, `UPDATE sync_backfill_checkpoints SET updated_at_ms = -9223372036854775808 WHERE partition = 'p5'`)
	if _, err := reader.BarrierSummary(ctx); err != nil {
		t.Fatalf("sync_barrier_summary with a stamp near -2^63: %v", err)
	}
	// The far-future stamp pins no lease: no live worker wrote it.
	mustExec(t, d.Pool, `SELECT sync_declare_checkpoint('p6', 'lease', 2)`)
	mustExec(t, worker, `SELECT sync_claim_checkpoint('p6', 'lease', 2)`)
	mustExec(t, d.Pool, `UPDATE sync_backfill_checkpoints SET updated_at_ms = 9223372036854775807 WHERE name = 'lease'`)
	var p string
	var epoch int64
	if err := worker.QueryRow(ctx, `SELECT partition, owner_epoch FROM sync_claim_next_checkpoint('lease', 2, 60000)`).Scan(&p, &epoch); err != nil || p != "p6" || epoch != 2 {
		t.Fatalf("a backfilling row stamped near 2^63: claim next took %q at epoch %d (%v), want p6 at 2 (no live owner)", p, epoch, err)
	}
}

// TestRedTeamLeaseBounds: a fleet lease of 0, negative or absurdly large is
// refused and changes nothing (a lease of 0 took every claim not locked
// mid-batch).
func TestRedTeamLeaseBounds(t *testing.T) {
	ctx := context.Background()
	d := pgtest.New(t)
	storeTables(t, d, 2, "todos")
	worker := loginAs(t, d, "sync_backfill", nil)
	mustExec(t, d.Pool, `SELECT sync_declare_checkpoint('p1', 'proj', 2)`)
	mustExec(t, worker, `SELECT sync_claim_checkpoint('p1', 'proj', 2)`) // owned, live
	for _, lease := range []int64{0, -1, 999, 86400001, 1 << 62} {
		before := attackState(t, d)
		_, err := worker.Exec(ctx, `SELECT * FROM sync_claim_next_checkpoint('proj', 2, $1)`, lease)
		wantSQLState(t, fmt.Sprintf("lease %d", lease), err, "22023", "lease_ms", "1000", "86400000")
		if after := attackState(t, d); after != before {
			t.Fatalf("lease %d changed the state:\nbefore %s\nafter  %s", lease, before, after)
		}
	}
	s := gosync.New(worker)
	if _, err := s.RunBackfills(ctx, gosync.Fleet{Backfill: gosync.Backfill{Name: "proj", SchemaVersion: 2, Sources: []string{"todos"},
		ApplyRange: todos.ApplyRange}, Lease: 10}); !errors.Is(err, gosync.ErrInvalidArgument) {
		t.Fatalf("a fleet with a 10 ns lease: %v, want ErrInvalidArgument", err)
	}
}

// TestRedTeamEpochNeverReused: an owner of a removed checkpoint keeps a dead
// epoch after the checkpoint is declared again and claimed by a new worker,
// through gosync's claim and through the upstream server's own claim
// statement (owner_epoch + 1, run by its owner login).
func TestRedTeamEpochNeverReused(t *testing.T) {
	ctx := context.Background()
	d := pgtest.New(t)
	storeTables(t, d, 2, "todos")
	admin := gosync.New(loginAs(t, d, "sync_admin", nil))
	workers := loginAs(t, d, "sync_backfill", nil) // two sessions of one login
	oldOwner, newOwner := gosync.New(workers), gosync.New(workers)
	mustPush(t, d.Pool, "p1", "todos", 2)
	for _, claim := range []string{"gosync", "upstream"} {
		name := "proj_" + claim
		if _, err := admin.DeclareCheckpoint(ctx, "p1", name, 2); err != nil {
			t.Fatal(err)
		}
		old, err := oldOwner.ClaimCheckpoint(ctx, "p1", name, 2)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := admin.RemoveCheckpoint(ctx, "p1", name); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.DeclareCheckpoint(ctx, "p1", name, 2); err != nil {
			t.Fatal(err)
		}
		var epoch int64
		if claim == "gosync" {
			cp, err := newOwner.ClaimCheckpoint(ctx, "p1", name, 2)
			if err != nil {
				t.Fatal(err)
			}
			epoch = cp.OwnerEpoch
		} else {
			// Upstream's claim ("owner_epoch = owner_epoch + 1"), as the
			// tables' owner.
			epoch = queryOne[int64](t, d.Pool, `UPDATE sync_backfill_checkpoints SET owner_epoch = owner_epoch + 1,
				state = 'backfilling', updated_at_ms = sync_now_ms() WHERE partition = 'p1' AND name = $1 RETURNING owner_epoch`, name)
		}
		if epoch <= old.OwnerEpoch {
			t.Fatalf("%s claim after remove and re-declare: epoch %d, the removed owner had %d", claim, epoch, old.OwnerEpoch)
		}
		before := attackState(t, d)
		if ok, err := oldOwner.AdvanceCheckpoint(ctx, gosync.CheckpointAdvance{Partition: "p1", Name: name, OwnerEpoch: old.OwnerEpoch, Watermark: 1, ObservedRows: 1}); err != nil || ok {
			t.Fatalf("%s: the removed owner advanced the re-declared checkpoint: %v, %v", claim, ok, err)
		}
		if r, err := oldOwner.ActivateCheckpoint(ctx, gosync.CheckpointActivation{Partition: "p1", Name: name, OwnerEpoch: old.OwnerEpoch, Watermark: 0, Sources: []string{"todos"}}); err != nil || r != gosync.ActivationStale {
			t.Fatalf("%s: the removed owner's activation = %q, %v; want stale", claim, r, err)
		}
		if after := attackState(t, d); after != before {
			t.Fatalf("%s: the removed owner changed the state:\nbefore %s\nafter  %s", claim, before, after)
		}
	}

	// Concurrent removals of checkpoints with different epochs never lower
	// the floor below any of them.
	for i := 0; i < 8; i++ {
		name := fmt.Sprintf("c%d", i)
		if _, err := admin.DeclareCheckpoint(ctx, "p2", name, 2); err != nil {
			t.Fatal(err)
		}
		for j := 0; j <= i; j++ {
			if _, err := oldOwner.ClaimCheckpoint(ctx, "p2", name, 2); err != nil {
				t.Fatal(err)
			}
		}
	}
	highest := queryOne[int64](t, d.Pool, `SELECT max(owner_epoch) FROM sync_backfill_checkpoints WHERE partition = 'p2'`)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, err := admin.RemoveCheckpoint(ctx, "p2", fmt.Sprintf("c%d", i))
			errs <- err
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.DeclareCheckpoint(ctx, "p2", "c7", 2); err != nil {
		t.Fatal(err)
	}
	if cp, err := newOwner.ClaimCheckpoint(ctx, "p2", "c7", 2); err != nil || cp.OwnerEpoch <= highest {
		t.Fatalf("claim after concurrent removals: %+v, %v; want an epoch above %d", cp, err, highest)
	}
}

// TestRedTeamActivationSources: an activation over no source table, or a
// table the stored schema does not have (a typo), is refused naming the
// known tables, and changes nothing; RunBackfill refuses before it claims.
func TestRedTeamActivationSources(t *testing.T) {
	ctx := context.Background()
	d, _ := backfillDB(t, 5)
	worker := gosync.New(loginAs(t, d, "sync_backfill", nil))
	cp, err := worker.ClaimCheckpoint(ctx, "p1", todos.Projection, 2)
	if err != nil {
		t.Fatal(err)
	}
	head := maxCommitSeq(t, d.Pool, "p1")
	if ok, err := worker.AdvanceCheckpoint(ctx, gosync.CheckpointAdvance{Partition: "p1", Name: todos.Projection, OwnerEpoch: cp.OwnerEpoch, Watermark: head, ObservedRows: 5}); err != nil || !ok {
		t.Fatalf("advance: %v, %v", ok, err)
	}
	for _, sources := range [][]string{nil, {}, {"todo"}, {"todos", "todo"}} {
		before := attackState(t, d)
		r, err := worker.ActivateCheckpoint(ctx, gosync.CheckpointActivation{Partition: "p1", Name: todos.Projection, OwnerEpoch: cp.OwnerEpoch, Watermark: head, Sources: sources})
		if !errors.Is(err, gosync.ErrUnknownSources) || !errors.Is(err, gosync.ErrInvalidArgument) || !strings.Contains(err.Error(), "known tables: todos") {
			t.Fatalf("activate over %q: %q, %v; want ErrUnknownSources naming todos", sources, r, err)
		}
		if after := attackState(t, d); after != before {
			t.Fatalf("activate over %q changed the state:\nbefore %s\nafter  %s", sources, before, after)
		}
	}
	before := attackState(t, d)
	if _, err := worker.RunBackfill(ctx, gosync.Backfill{Partition: "p1", Name: todos.Projection, SchemaVersion: 2,
		Sources: []string{"todo"}, ApplyRange: todos.ApplyRange}); !errors.Is(err, gosync.ErrUnknownSources) {
		t.Fatalf("RunBackfill over a typo: %v, want ErrUnknownSources", err)
	}
	if after := attackState(t, d); after != before {
		t.Fatalf("RunBackfill over a typo changed the state (it claimed?):\nbefore %s\nafter  %s", before, after)
	}
	if r, err := worker.ActivateCheckpoint(ctx, gosync.CheckpointActivation{Partition: "p1", Name: todos.Projection, OwnerEpoch: cp.OwnerEpoch, Watermark: head, Sources: []string{"todos"}}); err != nil || r != gosync.ActivationActivated {
		t.Fatalf("activate over todos: %q, %v", r, err)
	}
}

// projectionRows is p1's projection, or (want) what the log held before it
// was pruned, as text.
func projectionRows(t *testing.T, d *pgtest.DB, fromLog bool) string {
	t.Helper()
	if fromLog {
		return queryOne[string](t, d.Pool, `SELECT coalesce(string_agg(format('%s %s %s', todo_id, owner_id, title), ',' ORDER BY todo_id), '')
			FROM (SELECT DISTINCT ON (row_id) row_id AS todo_id, op,
			             convert_from(payload, 'UTF8')::jsonb ->> 'owner' AS owner_id,
			             convert_from(payload, 'UTF8')::jsonb ->> 'title' AS title
			        FROM sync_changes WHERE partition = 'p1' AND tbl = 'todos'
			       ORDER BY row_id, commit_seq DESC, idx DESC) last WHERE op = 1`)
	}
	return queryOne[string](t, d.Pool, `SELECT coalesce(string_agg(format('%s %s %s', todo_id, owner_id, title), ',' ORDER BY todo_id), '')
		FROM todos_by_owner WHERE partition = 'p1'`)
}

// TestRedTeamPruneRace: a sync_prune_log by sync_admin commits between a
// backfill batch's horizon check and its read of the changes (a hook in the
// batch's apply, before it reads: deterministic). In READ COMMITTED the read
// misses the pruned changes: the batch's advance refuses
// (sync.storage.log_pruned), the batch rolls back and nothing is activated.
// In REPEATABLE READ the batch's snapshot still holds the changes: it reads
// them all and the activated projection is complete. Never an activation
// over history the backfill did not read.
func TestRedTeamPruneRace(t *testing.T) {
	for _, iso := range []string{"read committed", "repeatable read"} {
		t.Run(iso, func(t *testing.T) {
			ctx := context.Background()
			d, _ := backfillDB(t, 40)
			mustExec(t, d.Pool, `GRANT SELECT, INSERT, UPDATE, DELETE ON todos_by_owner TO sync_backfill`)
			admin := gosync.New(loginAs(t, d, "sync_admin", nil))
			worker := gosync.New(loginAs(t, d, "sync_backfill", map[string]string{"default_transaction_isolation": iso}))
			want := projectionRows(t, d, true)
			pruneAt := maxCommitSeq(t, d.Pool, "p1") / 2
			var once sync.Once
			var pruneErr error
			apply := func(ctx context.Context, tx pgx.Tx, partition string, after, through int64) (int64, error) {
				once.Do(func() { _, pruneErr = admin.PruneLog(ctx, "p1", pruneAt) }) // commits now, in its own session
				return todos.ApplyRange(ctx, tx, partition, after, through)
			}
			cp, err := worker.RunBackfill(ctx, gosync.Backfill{Partition: "p1", Name: todos.Projection, SchemaVersion: 2,
				Sources: []string{todos.Source}, ApplyRange: apply, Knobs: gosync.NewBackfillKnobs(gosync.BackfillSettings{BatchSize: 1 << 20})})
			if pruneErr != nil {
				t.Fatal(pruneErr)
			}
			stored, serr := worker.Checkpoint(ctx, "p1", todos.Projection)
			if serr != nil {
				t.Fatal(serr)
			}
			if iso == "read committed" {
				if !errors.Is(err, gosync.ErrLogPruned) {
					t.Fatalf("backfill = %+v, %v; want ErrLogPruned (a read that missed pruned changes)", cp, err)
				}
				if stored.State != gosync.StateBackfilling || stored.Watermark != 0 || stored.ObservedRows != 0 {
					t.Fatalf("the refused batch left %+v; want backfilling at watermark 0", stored)
				}
				if got := projectionRows(t, d, false); got != "" {
					t.Fatalf("the refused batch left projection rows: %s", got)
				}
				return
			}
			if err != nil || stored.State != gosync.StateActivated {
				t.Fatalf("backfill = %+v, %v", stored, err)
			}
			if got := projectionRows(t, d, false); got != want {
				t.Fatalf("activated projection differs from the log before the prune:\nhave %s\nwant %s", got, want)
			}
		})
	}
}

// TestRedTeamEmptyCheckpointName: a pending checkpoint named ” (adopted
// rows skip the key check; written here as the superuser, the way an
// adoption leaves it) keeps the gate closed for servers that did not
// declare it.
func TestRedTeamEmptyCheckpointName(t *testing.T) {
	ctx := context.Background()
	d, _ := readyDB(t)
	mustExec(t, d.Pool, `INSERT INTO sync_backfill_checkpoints VALUES ('p2', '', 2, 'declared', 0, 0, 0, 0)`)
	reader := gosync.New(loginAs(t, d, "sync_reader", nil))
	r, err := reader.ServeCheck(ctx, "p3", gosync.Server{SchemaVersion: 2, Declared: []gosync.CheckpointDeclaration{{Partition: "p1", Name: todos.Projection, SchemaVersion: 2}}})
	if err != nil {
		t.Fatal(err)
	}
	if r == nil || r.Kind != gosync.RefusalCheckpoint || r.Checkpoint.Partition != "p2" || r.Checkpoint.Name != "" {
		t.Fatalf("serve check with an undeclared '' checkpoint in p2: %+v, want a checkpoint refusal naming p2/''", r)
	}
	var p, n *string
	if err := d.Pool.QueryRow(ctx, `SELECT * FROM sync_first_undeclared_checkpoint(2, '{todos_by_owner}')`).Scan(&p, &n); err != nil || p == nil || *p != "p2" || *n != "" {
		t.Fatalf("first undeclared = %v / %v, %v; want p2 / ''", p, n, err)
	}
}

// TestRedTeamApplyEndsTransaction: an apply whose statement ends the batch's
// transaction (ROLLBACK, COMMIT, ROLLBACK; BEGIN, ROLLBACK AND CHAIN) never
// lets the watermark advance outside it: ApplyRangeSQL refuses such a
// statement up front, and a batch whose apply ended its transaction anyway
// fails with ErrBatchTransactionEnded and advances nothing.
func TestRedTeamApplyEndsTransaction(t *testing.T) {
	ctx := context.Background()
	for _, stmt := range []string{"ROLLBACK", "commit", "  /* a comment /* nested */ */ -- and one more\n END", "ROLLBACK AND CHAIN", "begin", "PREPARE TRANSACTION 'x'", "savepoint s"} {
		if _, err := gosync.ApplyRangeSQL(stmt, []string{"todos"}); !errors.Is(err, gosync.ErrInvalidArgument) {
			t.Fatalf("ApplyRangeSQL(%q): %v, want ErrInvalidArgument", stmt, err)
		}
	}
	d, _ := backfillDB(t, 10)
	mustExec(t, d.Pool, `GRANT SELECT, INSERT, UPDATE, DELETE ON todos_by_owner TO sync_backfill`)
	worker := gosync.New(loginAs(t, d, "sync_backfill", nil))
	for _, stmt := range []string{"ROLLBACK", "COMMIT", "ROLLBACK; BEGIN", "ROLLBACK AND CHAIN", "COMMIT AND CHAIN"} {
		before, err := worker.Checkpoint(ctx, "p1", todos.Projection)
		if err != nil {
			t.Fatal(err)
		}
		apply := func(ctx context.Context, tx pgx.Tx, partition string, after, through int64) (int64, error) {
			_, err := tx.Exec(ctx, stmt, pgx.QueryExecModeSimpleProtocol)
			return 0, err
		}
		_, err = worker.RunBackfill(ctx, gosync.Backfill{Partition: "p1", Name: todos.Projection, SchemaVersion: 2,
			Sources: []string{todos.Source}, ApplyRange: apply})
		if !errors.Is(err, gosync.ErrBatchTransactionEnded) {
			t.Fatalf("apply %q: %v, want ErrBatchTransactionEnded", stmt, err)
		}
		after, err := worker.Checkpoint(ctx, "p1", todos.Projection)
		if err != nil {
			t.Fatal(err)
		}
		if after.Watermark != before.Watermark || after.ObservedRows != before.ObservedRows || after.State != gosync.StateBackfilling {
			t.Fatalf("apply %q moved the checkpoint: %+v -> %+v", stmt, before, after)
		}
	}
}
