package tests

// The suites' shared helpers: databases in a known state, writes to the log,
// reads of the barrier state, catalogs, roles and the gosync command.
// Helpers used by one file only stay in that file; benchmark-only ones are
// in bench_helpers_test.go.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/gosync/gosync/db"
	"github.com/gosync/gosync/examples/todos"
	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
	sqlfiles "github.com/gosync/gosync/sql"
)

// ---- The application and the servers under test ----

// The example application (examples/todos) is the tests' application too.
var (
	todosSchema = todos.Schema
	todosDDL    = todos.SchemaChange
)

// todosByOwner is the v2 projection of the example application, declared for p1.
var todosByOwner = gosync.CheckpointDeclaration{Partition: "p1", Name: "todos_by_owner", SchemaVersion: 2}

// serverV1 is a server running schema v1, which declares no checkpoint.
var serverV1 = gosync.Server{SchemaVersion: 1}

// serverV2 is a server running schema v2 that declares todosByOwner.
var serverV2 = gosync.Server{SchemaVersion: 2, Declared: []gosync.CheckpointDeclaration{todosByOwner}}

// ---- Databases in a known state ----

// v1DB is a database at schema v1 (todos without owner_id).
func v1DB(t *testing.T) (*pgtest.DB, *gosync.Store) {
	t.Helper()
	d := pgtest.New(t)
	s := gosync.New(d.Pool)
	if err := s.EnsureSchema(context.Background(), todosSchema(1), nil, todosDDL(1)); err != nil {
		t.Fatal(err)
	}
	return d, s
}

// readyDB returns a database at schema v2 with todos_by_owner declared for p1.
func readyDB(t *testing.T) (*pgtest.DB, *gosync.Store) {
	t.Helper()
	d := pgtest.New(t)
	s := gosync.New(d.Pool)
	if err := s.EnsureSchema(context.Background(), todosSchema(2), []gosync.CheckpointDeclaration{todosByOwner}, todosDDL(2)); err != nil {
		t.Fatal(err)
	}
	return d, s
}

// backfillDB is a database where v1 writers wrote n todo changes to p1,
// then the v2 bump declared todos_by_owner for p1.
func backfillDB(t *testing.T, n int) (*pgtest.DB, *gosync.Store) {
	t.Helper()
	ctx := context.Background()
	d, s := v1DB(t)
	if err := todos.SeedLog(ctx, d.Pool, "p1", n, 300, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureSchema(ctx, todosSchema(2), []gosync.CheckpointDeclaration{todosByOwner}, todosDDL(2)); err != nil {
		t.Fatal(err)
	}
	return d, s
}

// fleetDB seeds n partitions with changes commits each and bumps to v2
// with todos_by_owner declared in every partition.
func fleetDB(t *testing.T, n, changes int) (*pgtest.DB, *gosync.Store, []string) {
	t.Helper()
	ctx := context.Background()
	d, s := v1DB(t)
	partitions := make([]string, n)
	for i := range partitions {
		partitions[i] = fmt.Sprintf("f%03d", i)
		if err := todos.SeedLog(ctx, d.Pool, partitions[i], changes, 40, 1); err != nil {
			t.Fatal(err)
		}
	}
	everywhere := []gosync.CheckpointDeclaration{{AllPartitions: true, Name: todos.Projection, SchemaVersion: 2}}
	if err := s.EnsureSchema(ctx, todosSchema(2), everywhere, todosDDL(2)); err != nil {
		t.Fatal(err)
	}
	return d, s, partitions
}

// ---- Writing to the log ----

// v is a pointer to n, for optional writer versions.
func v(n int64) *int64 { return &n }

// todoCommit is a client commit id of nChanges todo inserts owned by u1.
func todoCommit(id string, nChanges int) gosync.Commit {
	c := gosync.Commit{ClientID: "client-1", ClientCommitID: id, ActorID: "u1", CreatedAtMs: 1000}
	for i := 0; i < nChanges; i++ {
		rv := int64(i + 1)
		c.Changes = append(c.Changes, gosync.Change{
			Table: "todos", RowID: fmt.Sprintf("%s-r%d", id, i), Op: 1, RowVersion: &rv,
			Scopes: map[string][]string{"owner": {"u1"}}, Payload: []byte(`{"title":"x"}`),
		})
	}
	return c
}

// oldWriterCommit appends one commit as an upstream server's push does
// (todos.OldWriterCommit: no lock, no gate) and returns its seq; version nil
// is an old binary that knows no writer_version.
func oldWriterCommit(ctx context.Context, q db.DBTX, partition string, version *int64) (int64, error) {
	seq, err := todos.OldWriterCommit(ctx, q, partition, "cc-"+partition, version)
	return seq, gosync.MapError(err)
}

// beginner is what starts a transaction: a pool or a connection.
type beginner interface {
	Begin(context.Context) (pgx.Tx, error)
}

// pushChange appends one commit carrying writerVersion with one change to
// tbl, holding the partition lock as a push does, and returns its commit_seq.
func pushChange(ctx context.Context, conn beginner, partition, tbl string, writerVersion int64) (int64, error) {
	var seq int64
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT FROM sync_lock_partition($1)", partition); err != nil {
			return err
		}
		var err error
		if seq, err = oldWriterCommit(ctx, tx, partition, v(writerVersion)); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO sync_changes VALUES ($1, $2, 0, $3, 'r', 1, 1, '{}', NULL)`, partition, seq, tbl)
		return err
	})
	return seq, err
}

// mustPush is pushChange, failing t on error.
func mustPush(t *testing.T, conn beginner, partition, tbl string, writerVersion int64) int64 {
	t.Helper()
	seq, err := pushChange(context.Background(), conn, partition, tbl, writerVersion)
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	return seq
}

// pushAsync pushes todoCommit(id, 2) in the background; the channel gets its error.
func pushAsync(s *gosync.Store, partition, id string, srv gosync.Server) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := s.Push(context.Background(), partition, todoCommit(id, 2), srv)
		done <- err
	}()
	return done
}

// upstreamPush is a push the way the upstream server's Postgres storage
// writes it, in one transaction on partition p1 (see upstreamPushTx).
func upstreamPush(ctx context.Context, pool *pgxpool.Pool, clientCommitID string, writerVersion *int64) (int64, error) {
	var seq int64
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) {
		seq, err = upstreamPushTx(ctx, tx, "p1", clientCommitID, writerVersion)
		return err
	})
	return seq, err
}

// upstreamPushTx is the upstream server's push statements in tx: allocate
// the seq by upserting sync_partitions and insert the commit in one
// statement (todos.OldWriterCommit), then its change, the change's scope
// and the push result. writerVersion nil is an upstream server before 0.23.
func upstreamPushTx(ctx context.Context, tx pgx.Tx, partition, clientCommitID string, writerVersion *int64) (int64, error) {
	seq, err := todos.OldWriterCommit(ctx, tx, partition, clientCommitID, writerVersion)
	if err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO sync_changes(partition, commit_seq, idx, tbl, row_id, op, row_version, scopes, payload)
		VALUES ($1, $2, 0, 'todos', $3, 1, 1, '{"owner": "alice"}', '{}')`, partition, seq, "t-"+clientCommitID); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO sync_change_scopes(partition, tbl, var, value, commit_seq)
		VALUES ($1, 'todos', 'owner', 'alice', $2)`, partition, seq); err != nil {
		return 0, err
	}
	_, err = tx.Exec(ctx, `INSERT INTO sync_push_results(partition, client_id, client_commit_id, result)
		VALUES ($1, $2, $3, $4)`, partition, "old-binary", clientCommitID, fmt.Sprintf(`{"status": "applied", "commitSeq": %d}`, seq))
	return seq, err
}

// ---- Statements and single values ----

// execer runs a statement: a pool, a connection or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// querier runs a query: a pool, a connection or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// mustExec runs one statement on q, failing t on error.
func mustExec(t testing.TB, q execer, sql string, args ...any) {
	t.Helper()
	if _, err := q.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// queryOne is the single value of a one-row, one-column query on q, failing t on error.
func queryOne[T any](t testing.TB, q querier, sql string, args ...any) T {
	t.Helper()
	var v T
	if err := q.QueryRow(context.Background(), sql, args...).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

// ---- Reading the state ----

// countCommits is the number of commits stored in partition.
func countCommits(t testing.TB, q querier, partition string) int64 {
	t.Helper()
	return queryOne[int64](t, q, "SELECT count(*) FROM sync_commits WHERE partition = $1", partition)
}

// maxCommitSeq is partition's max_commit_seq (its head) as q sees it.
func maxCommitSeq(t testing.TB, q querier, partition string) int64 {
	t.Helper()
	return queryOne[int64](t, q, "SELECT max_commit_seq FROM sync_partitions WHERE partition = $1", partition)
}

// fenceOf is partition's required_writer_version; a missing fence row fails t.
func fenceOf(t testing.TB, q querier, partition string) int64 {
	t.Helper()
	return queryOne[int64](t, q, "SELECT required_writer_version FROM sync_writer_fence WHERE partition = $1", partition)
}

// schemaVersion is the version in the schema marker.
func schemaVersion(t testing.TB, q querier) int64 {
	t.Helper()
	return queryOne[int64](t, q, "SELECT schema_version FROM sync_schema_meta")
}

// logState is every log table's row count and the partitions' seqs.
func logState(t *testing.T, d *pgtest.DB) string {
	t.Helper()
	return queryOne[string](t, d.Pool, `SELECT concat_ws(' ',
		(SELECT count(*) FROM sync_commits), (SELECT count(*) FROM sync_changes),
		(SELECT count(*) FROM sync_change_scopes), (SELECT count(*) FROM sync_push_results),
		(SELECT string_agg(format('%s', p), ',' ORDER BY partition) FROM sync_partitions p))`)
}

// barrierState is the barrier tables as text, for before/after comparisons.
func barrierState(t *testing.T, d *pgtest.DB) string {
	t.Helper()
	return queryOne[string](t, d.Pool, `SELECT concat_ws(' | ',
		(SELECT string_agg(format('%s', c), ',' ORDER BY partition, name) FROM sync_backfill_checkpoints c),
		(SELECT string_agg(format('%s', f), ',' ORDER BY partition) FROM sync_writer_fence f),
		(SELECT string_agg(format('%s', p), ',' ORDER BY partition) FROM sync_partitions p))`)
}

// projectionDiff compares p1's projection with a from-scratch rebuild from
// the log through seq (all of it when seq < 0); "" when equal.
func projectionDiff(t *testing.T, d *pgtest.DB, through int64) string {
	t.Helper()
	return projectionDiffIn(t, d, "p1", through)
}

// projectionDiffIn is projectionDiff for any partition.
func projectionDiffIn(t *testing.T, d *pgtest.DB, partition string, through int64) string {
	t.Helper()
	return queryOne[string](t, d.Pool, `
		WITH want AS (
		  SELECT partition, todo_id, owner_id, title
		    FROM (SELECT DISTINCT ON (row_id) partition, row_id AS todo_id, op,
		                 convert_from(payload, 'UTF8')::jsonb ->> 'owner' AS owner_id,
		                 convert_from(payload, 'UTF8')::jsonb ->> 'title' AS title
		            FROM sync_changes
		           WHERE partition = $2 AND tbl = 'todos' AND ($1 < 0 OR commit_seq <= $1)
		           ORDER BY row_id, commit_seq DESC, idx DESC) last
		   WHERE op = 1),
		have AS (SELECT partition, todo_id, owner_id, title FROM todos_by_owner WHERE partition = $2)
		SELECT coalesce(string_agg(format('%s %s', side, r), '; '), '') FROM (
		  (SELECT 'missing' AS side, w::text AS r FROM (SELECT * FROM want EXCEPT SELECT * FROM have) w)
		  UNION ALL
		  (SELECT 'extra', h::text FROM (SELECT * FROM have EXCEPT SELECT * FROM want) h)) d`, through, partition)
}

// ---- Waiting ----

// within is the next value from ch, failing t after 15 seconds.
func within[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(15 * time.Second):
		t.Fatalf("%s: still waiting after 15s (blocked?)", what)
		panic("unreachable")
	}
}

// waitForLockWaiters waits until n backends of the test database wait on a lock.
func waitForLockWaiters(t *testing.T, d *pgtest.DB, n int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		waiting := queryOne[int](t, d.Pool, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`)
		if waiting >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d backends wait on a lock, want %d", waiting, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ---- Errors and roles ----

// sqlState is err's SQLSTATE, "" when err is not a Postgres error.
func sqlState(err error) string {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Code
	}
	return ""
}

// loginURL creates a real login role, member of group (none when ""), and
// returns its URL and name. The role is dropped when the test ends.
func loginURL(t *testing.T, d *pgtest.DB, group string) (*url.URL, string) {
	t.Helper()
	ctx := context.Background()
	name := fmt.Sprintf("%s_%s", d.Name, group)
	if group == "" {
		name = d.Name + "_nobody"
	}
	sql := fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD 'pw'", pgx.Identifier{name}.Sanitize())
	if group != "" {
		sql += " IN ROLE " + pgx.Identifier{group}.Sanitize()
	}
	if _, err := d.Pool.Exec(ctx, sql); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(d.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(name, "pw")
	t.Cleanup(func() {
		_, _ = d.Pool.Exec(context.Background(), "DROP OWNED BY "+pgx.Identifier{name}.Sanitize()+"; DROP ROLE "+pgx.Identifier{name}.Sanitize())
	})
	return u, name
}

// loginAs returns a pool connected as a new login role in group (see
// loginURL), with the runtime parameters given.
func loginAs(t *testing.T, d *pgtest.DB, group string, runtime map[string]string) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	u, name := loginURL(t, d, group)
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range runtime {
		cfg.ConnConfig.RuntimeParams[k] = v
	}
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("connect as %s: %v", name, err)
	}
	return pool
}

// ---- Bulk loads ----

// fillChanges bulk-loads n changes into partition p, round-robin over five
// tables. A set-based load moves the head by n at once, which the head-only
// triggers refuse to any writer, so it runs as a restore does: in one
// transaction with session_replication_role = replica (the harness connects
// as a superuser).
func fillChanges(b testing.TB, pool *pgxpool.Pool, n int) {
	b.Helper()
	restore(b, pool, `INSERT INTO sync_changes
		SELECT 'p', g, 0, (ARRAY['todos','notes','lists','tags','users'])[1 + g % 5], 'r' || g, 1, 1, '{}', NULL
		  FROM generate_series(1, $1::int) g`, n)
	restore(b, pool, `INSERT INTO sync_partitions VALUES ('p', $1, 0)`, n)
	mustExec(b, pool, `ANALYZE sync_changes`)
}

// restore runs one statement with the triggers off (a bulk load of a
// synthetic log, as pg_restore would write it).
func restore(b testing.TB, pool *pgxpool.Pool, sql string, args ...any) {
	b.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, sql, args...)
		return err
	})
	if err != nil {
		b.Fatalf("%s: %v", sql, err)
	}
}

// fillPending declares n pending checkpoints of version 2 named proj in as
// many partitions, plus one of another projection in the last partition.
func fillPending(t testing.TB, q execer, n int) {
	t.Helper()
	mustExec(t, q, `INSERT INTO sync_schema_meta VALUES (1, 2, '{}') ON CONFLICT (id) DO NOTHING`)
	mustExec(t, q, `INSERT INTO sync_backfill_checkpoints (partition, name, schema_version, state, updated_at_ms)
		SELECT 'w' || lpad(i::text, 7, '0'), 'proj', 2, 'declared', 0 FROM generate_series(1, $1) i`, n)
	mustExec(t, q, `INSERT INTO sync_backfill_checkpoints (partition, name, schema_version, state, updated_at_ms)
		VALUES ('w' || lpad($1::int::text, 7, '0'), 'other', 2, 'backfilling', 0)`, n)
	mustExec(t, q, `ANALYZE sync_backfill_checkpoints`)
}

// ---- Plans ----

// actualRows finds an index scan of sync_backfill_checkpoints and its actual rows.
var actualRows = regexp.MustCompile(`Index (?:Only )?Scan[^\n]* on sync_backfill_checkpoints[^\n]*actual time=[0-9.]+\.\.[0-9.]+ rows=(\d+) loops=(\d+)`)

// assertOneRowIndexReads checks the plans that read sync_backfill_checkpoints
// (as c): each is an index scan (of index, when given) returning at most one
// row, never a sequential or bitmap scan, and there are at least minReads.
func assertOneRowIndexReads(t *testing.T, plans []string, index string, minReads int) {
	t.Helper()
	reads := 0
	for _, p := range plans {
		if !strings.Contains(p, "sync_backfill_checkpoints c") {
			continue
		}
		reads++
		if strings.Contains(p, "Seq Scan on sync_backfill_checkpoints") || strings.Contains(p, "Bitmap") {
			t.Fatalf("a read scans the checkpoints:\n%s", p)
		}
		if !actualRows.MatchString(p) {
			t.Fatalf("no index scan of sync_backfill_checkpoints in:\n%s", p)
		}
		for _, m := range actualRows.FindAllStringSubmatch(p, -1) {
			if rows, _ := strconv.Atoi(m[1]); rows > 1 {
				t.Fatalf("an index scan returned %s rows (want at most 1):\n%s", m[1], p)
			}
		}
		if index != "" && !strings.Contains(p, index) {
			t.Fatalf("a read does not use %s:\n%s", index, p)
		}
	}
	if reads < minReads {
		t.Fatalf("auto_explain reported %d reads of the checkpoints, want at least %d (plans seen: %d)", reads, minReads, len(plans))
	}
	t.Logf("plan:\n%s", plans[len(plans)-3])
}

// explainingConn opens a connection on which auto_explain reports the plan
// of every statement, nested ones (inside functions) included, as a NOTICE
// (with extra settings, e.g. auto_explain.log_analyze); plans returns the
// plans reported so far. It is closed when the test ends.
func explainingConn(t *testing.T, url string, extra ...string) (*pgx.Conn, func() []string) {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	var plans []string
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		defer mu.Unlock()
		plans = append(plans, n.Message)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	for _, s := range append([]string{"LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0",
		"SET auto_explain.log_nested_statements = on", "SET auto_explain.log_level = notice"}, extra...) {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return conn, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), plans...)
	}
}

// ---- Catalogs ----

// catalogQueries dump what the compatibility promise covers, one line per
// object, in a stable order. Only relations named sync_% and functions in the
// current schema are read, so goose's version table is left out.
var catalogQueries = map[string]string{
	"tables": `
		SELECT format('%s.%s %s%s%s', c.relname, a.attname, format_type(a.atttypid, a.atttypmod),
		              CASE WHEN a.attnotnull THEN ' not null' ELSE '' END,
		              coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), ''))
		  FROM pg_class c
		  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
		  LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
		 WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
		   AND c.relname LIKE 'sync\_%'
		 ORDER BY c.relname, a.attnum`,
	"constraints": `
		SELECT format('%s %s %s', c.relname, k.conname, pg_get_constraintdef(k.oid))
		  FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
		 WHERE c.relnamespace = current_schema()::regnamespace AND c.relname LIKE 'sync\_%'
		 ORDER BY 1`,
	"indexes": `
		SELECT format('%s %s', tablename, replace(indexdef, 'ON ' || schemaname || '.', 'ON '))
		  FROM pg_indexes
		 WHERE schemaname = current_schema() AND tablename LIKE 'sync\_%'
		 ORDER BY 1`,
	"triggers": `
		SELECT format('%s %s %s', c.relname, CASE t.tgenabled WHEN 'O' THEN 'enabled' ELSE 'not-enabled' END,
		              replace(pg_get_triggerdef(t.oid), 'ON ' || current_schema() || '.', 'ON '))
		  FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
		 WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace
		 ORDER BY 1`,
	"functions": `
		SELECT pg_get_functiondef(p.oid)
		  FROM pg_proc p
		 WHERE p.pronamespace = current_schema()::regnamespace
		   AND NOT EXISTS (SELECT 1 FROM pg_depend d
		                    WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
		 ORDER BY p.proname, pg_get_function_identity_arguments(p.oid)`,
}

// dumpCatalog returns the named part of the catalog dump as text.
func dumpCatalog(t *testing.T, pool *pgxpool.Pool, part string) string {
	t.Helper()
	return queryLines(t, pool, catalogQueries[part])
}

// dumpWholeCatalog is every part, for before/after comparisons.
func dumpWholeCatalog(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var b strings.Builder
	for _, part := range []string{"tables", "constraints", "indexes", "triggers", "functions"} {
		b.WriteString("## " + part + "\n" + dumpCatalog(t, pool, part) + "\n")
	}
	return b.String()
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
	inGot := map[string]bool{}
	for _, l := range strings.Split(got, "\n") {
		inGot[l] = true
	}
	inWant := map[string]bool{}
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		inWant[l] = true
		if !inGot[l] {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !inWant[l] {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}

// ---- Upstream databases and migrations ----

// upstreamDB is an un-migrated database shaped as an upstream 0.22 server
// leaves it (testdata/upstream_0_22.sql), with its rows when filled.
func upstreamDB(t *testing.T, filled bool) *pgtest.DB {
	t.Helper()
	d := pgtest.NewEmpty(t)
	execFile(t, d.Pool, "testdata/upstream_0_22.sql")
	if filled {
		execFile(t, d.Pool, "testdata/upstream_0_22_rows.sql")
	}
	return d
}

// execFile runs the SQL file at path (relative to tests/) on pool.
func execFile(t *testing.T, pool *pgxpool.Pool, path string) {
	t.Helper()
	sql, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(context.Background(), string(sql)); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// tableColumns lists every table of the current schema but goose's version
// tables, with its columns in order.
func tableColumns(t *testing.T, pool *pgxpool.Pool) map[string][]string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT c.relname::text, array_agg(a.attname::text ORDER BY a.attnum)
		  FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
		 WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
		   AND c.relname NOT LIKE '%db\_version'
		 GROUP BY c.relname`)
	if err != nil {
		t.Fatal(err)
	}
	cols := map[string][]string{}
	var name string
	var list []string
	if _, err := pgx.ForEachRow(rows, []any{&name, &list}, func() error { cols[name] = list; return nil }); err != nil {
		t.Fatal(err)
	}
	return cols
}

// tableRows is the row count and every row of each table in cols, reading
// only the columns listed: the same rows read the same after columns were
// added.
func tableRows(t *testing.T, pool *pgxpool.Pool, cols map[string][]string) string {
	t.Helper()
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(cols)) {
		idents := make([]string, len(cols[name]))
		for i, c := range cols[name] {
			idents[i] = pgx.Identifier{c}.Sanitize()
		}
		rows := queryLines(t, pool, fmt.Sprintf("SELECT ROW(%s)::text FROM %s ORDER BY 1",
			strings.Join(idents, ", "), pgx.Identifier{name}.Sanitize()))
		n := 0
		if rows != "" {
			n = strings.Count(rows, "\n") + 1
		}
		fmt.Fprintf(&b, "%s: %d rows\n  %s\n", name, n, strings.ReplaceAll(rows, "\n", "\n  "))
	}
	return b.String()
}

// rowsQuerier runs a query returning rows: a pool, a connection or a transaction.
type rowsQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// queryLines runs a query of one text column and joins its rows.

func queryLines(t *testing.T, pool rowsQuerier, sql string, args ...any) string {
	t.Helper()
	rows, err := pool.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, sql)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// appTableCatalog is one application table's definition: columns, defaults,
// constraints, indexes, triggers and privileges.
func appTableCatalog(t *testing.T, pool *pgxpool.Pool, table string) string {
	t.Helper()
	return queryLines(t, pool, `
		SELECT format('column %s %s%s%s', a.attname, format_type(a.atttypid, a.atttypmod),
		              CASE WHEN a.attnotnull THEN ' not null' ELSE '' END,
		              coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), ''))
		  FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		 WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped
		UNION ALL SELECT 'constraint ' || pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = $1::regclass
		UNION ALL SELECT 'index ' || pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = $1::regclass
		UNION ALL SELECT 'trigger ' || pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = $1::regclass
		UNION ALL SELECT 'acl ' || coalesce(relacl::text, 'default') FROM pg_class WHERE oid = $1::regclass
		ORDER BY 1`, table)
}

// syncACLs are the privileges on gosync's relations (the roles migration's
// grants), which the catalog dump leaves out.
func syncACLs(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	return queryLines(t, pool, `
		SELECT relname || ' ' || coalesce(relacl::text, 'default') FROM pg_class
		 WHERE relnamespace = current_schema()::regnamespace AND relname LIKE 'sync\_%' AND relkind IN ('r', 'v')
		 ORDER BY 1`)
}

// assertFreshCatalog: d's catalog (tables, keys, indexes, trigger,
// functions, grants) is exactly a freshly migrated gosync database's.
func assertFreshCatalog(t *testing.T, d *pgtest.DB) {
	t.Helper()
	fresh := pgtest.New(t)
	if want, got := dumpWholeCatalog(t, fresh.Pool), dumpWholeCatalog(t, d.Pool); got != want {
		t.Fatalf("adopted catalog differs from a fresh gosync database's:\n%s", lineDiff(want, got))
	}
	if want, got := syncACLs(t, fresh.Pool), syncACLs(t, d.Pool); got != want {
		t.Fatalf("adopted grants differ from a fresh gosync database's:\n%s", lineDiff(want, got))
	}
}

// recordedVersion is the newest applied version in goose version table table, -1 when none.
func recordedVersion(t *testing.T, pool *pgxpool.Pool, table string) int64 {
	t.Helper()
	return queryOne[int64](t, pool, "SELECT coalesce(max(version_id), -1) FROM "+pgx.Identifier{table}.Sanitize()+" WHERE is_applied")
}

// gooseBinary is $GOOSE_BIN (the Makefile builds bin/goose), else the pinned
// goose CLI built from tools/go.mod.
func gooseBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("GOOSE_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "goose")
	cmd := exec.Command("go", "build", "-tags", "no_clickhouse no_libsql no_mssql no_mysql no_sqlite3 no_vertica no_ydb",
		"-o", bin, "github.com/pressly/goose/v3/cmd/goose")
	cmd.Dir = "../tools"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build goose CLI: %v\n%s", err, out)
	}
	return bin
}

// latestVersion is the version of the newest embedded migration.
func latestVersion(t *testing.T) int64 {
	t.Helper()
	files, err := fs.Glob(sqlfiles.Migrations(), "*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no migrations: %v", err)
	}
	v, err := strconv.ParseInt(strings.SplitN(files[len(files)-1], "_", 2)[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// ---- The gosync command ----

// cliBinary builds the gosync command once per test binary and returns its
// path; TestMain removes it (removeCLIBinary).
var cliBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "gosync-cli-")
	if err != nil {
		return "", err
	}
	cliDir.Store(&dir)
	bin := filepath.Join(dir, "gosync")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/gosync").CombinedOutput()
	if err != nil {
		return "", errors.New(string(out))
	}
	return bin, nil
})

// cliDir is the directory cliBinary built the command in, if it did.
var cliDir atomic.Pointer[string]

func removeCLIBinary() {
	if dir := cliDir.Load(); dir != nil {
		_ = os.RemoveAll(*dir)
	}
}

// cliResult is one run of the gosync command: its output and exit status.
type cliResult struct {
	stdout, stderr string
	code           int
}

// gosyncCLI runs the command as a subprocess, without DATABASE_URL in its
// environment (the database is --db, or the embedded default).
func gosyncCLI(t *testing.T, args ...string) cliResult {
	t.Helper()
	bin, err := cliBinary()
	if err != nil {
		t.Fatalf("build gosync: %v", err)
	}
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return cliResult{stdout.String(), stderr.String(), code}
}

// json decodes the run's stdout into v, failing t when it is not JSON.
func (r cliResult) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, r.stdout)
	}
}

// wantCode fails t, with the run's output, unless it exited with code.
func wantCode(t *testing.T, r cliResult, code int, args string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("gosync %s: exit %d, want %d\nstdout: %s\nstderr: %s", args, r.code, code, r.stdout, r.stderr)
	}
}

// emptyMigrator is a database with nothing migrated and a gosync Migrator on
// it, closed when the test ends: for tests that walk the migrations.
func emptyMigrator(t *testing.T) (*pgtest.DB, *gosync.Migrator) {
	t.Helper()
	d := pgtest.NewEmpty(t)
	p, err := gosync.NewMigrator(context.Background(), d.Pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return d, p
}

// appMigrationsAtV1 is the example application's goose migrations
// (examples/app-migration) on d, with its v1 applied, closed when the test
// ends.
func appMigrationsAtV1(t *testing.T, d *pgtest.DB) *goose.Provider {
	t.Helper()
	p, err := goose.NewProvider(goose.DialectPostgres, stdlib.OpenDBFromPool(d.Pool),
		os.DirFS("../examples/app-migration/migrations"), goose.WithTableName("app_goose_db_version"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if _, err := p.ApplyVersion(context.Background(), 1, true); err != nil {
		t.Fatal(err)
	}
	return p
}
