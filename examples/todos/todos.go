// Package todos is the example application of the demo, the CLI's backfill
// command and the tests: a todos table synced through the log, and the
// todos_by_owner projection that schema v2 adds and must backfill.
//
// A change of table "todos" carries a JSON payload {"title": ..., "owner": ...};
// op 1 writes the row, op 2 deletes it.
package todos

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/gosync/gosync/gosync"
)

// Source is the source table of the projection; Projection its checkpoint name.
const (
	Source     = "todos"
	Projection = "todos_by_owner"
)

// ProjectionDDL creates the projection table.
const ProjectionDDL = `CREATE TABLE IF NOT EXISTS todos_by_owner (
  partition text NOT NULL,
  todo_id text NOT NULL,
  owner_id text NOT NULL,
  title text NOT NULL,
  PRIMARY KEY (todo_id, partition)
);
CREATE INDEX IF NOT EXISTS todos_by_owner_owner ON todos_by_owner (partition, owner_id)`

// Payload is a todo change's payload.
type Payload struct {
	Title string `json:"title"`
	Owner string `json:"owner"`
}

// Apply writes a batch of source changes (in commit order) to the
// projection, set-based: the last change of each todo wins, applied as one
// DELETE and one INSERT of arrays.
func Apply(ctx context.Context, tx pgx.Tx, batch []gosync.SourceChange) error {
	if len(batch) == 0 {
		return nil
	}
	partition := batch[0].Partition
	last := map[string]gosync.SourceChange{}
	for _, c := range batch {
		last[c.RowID] = c
	}
	touched := make([]string, 0, len(last))
	var ids, owners, titles []string
	for id, c := range last {
		touched = append(touched, id)
		if c.Op != gosync.OpUpsert {
			continue
		}
		var p Payload
		if err := json.Unmarshal(c.Payload, &p); err != nil {
			return fmt.Errorf("todo %s at seq %d: payload: %w", id, c.CommitSeq, err)
		}
		ids, owners, titles = append(ids, id), append(owners, p.Owner), append(titles, p.Title)
	}
	// See ApplyRange: probe the primary key for each touched todo.
	if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM todos_by_owner WHERE todo_id = ANY($2) AND partition || '' = $1`, partition, touched); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO todos_by_owner (partition, todo_id, owner_id, title)
		SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[])`, partition, ids, owners, titles)
	return err
}

// ApplyRange is the set-based Apply: it writes the projection for the
// changes in (after, through] inside the database (the last change of each
// todo wins) and returns how many source changes it read. Two statements,
// sent with the planner setting in one round trip: remove every todo the
// batch touches, then insert the survivors with a plain INSERT (cheaper than
// ON CONFLICT for a projection that mostly grows).
func ApplyRange(ctx context.Context, tx pgx.Tx, partition string, after, through int64) (int64, error) {
	var n int64
	// The projection grows during the fill while its statistics still say
	// "empty", so the planner believes any scan of it is cheap: a delete by
	// partition plus a filter, once per batch over an ever larger table, is
	// quadratic. The delete must probe the primary key (todo_id first) for
	// each touched todo: no sequential scan, and "partition || ''" keeps the
	// partition off the other index. The three statements travel as one
	// pipelined batch: one round trip.
	batch := &pgx.Batch{}
	batch.Queue("SELECT set_config('enable_seqscan', 'off', true)")
	batch.Queue(`
WITH batch AS (
  SELECT row_id FROM sync_changes
   WHERE partition = $1 AND tbl = 'todos' AND commit_seq > $2 AND commit_seq <= $3
), deleted AS (
  DELETE FROM todos_by_owner t
   WHERE t.todo_id = ANY (ARRAY(SELECT DISTINCT row_id FROM batch)) AND t.partition || '' = $1
)
SELECT count(*) FROM batch`, partition, after, through).QueryRow(func(row pgx.Row) error { return row.Scan(&n) })
	batch.Queue(`
INSERT INTO todos_by_owner (partition, todo_id, owner_id, title)
SELECT $1, row_id, p ->> 'owner', p ->> 'title'
  FROM (SELECT DISTINCT ON (row_id) row_id, op, convert_from(payload, 'UTF8')::jsonb AS p
          FROM sync_changes
         WHERE partition = $1 AND tbl = 'todos' AND commit_seq > $2 AND commit_seq <= $3
         ORDER BY row_id, commit_seq DESC, idx DESC) last
 WHERE op = 1`, partition, after, through)
	err := tx.SendBatch(ctx, batch).Close()
	return n, err
}

// RebuildQuery computes the projection of a partition ($1) from scratch,
// from the whole log: what an exact backfill must equal.
const RebuildQuery = `
SELECT partition, row_id AS todo_id, convert_from(payload, 'UTF8')::jsonb ->> 'owner' AS owner_id,
       convert_from(payload, 'UTF8')::jsonb ->> 'title' AS title
  FROM (SELECT DISTINCT ON (row_id) partition, row_id, op, payload
          FROM sync_changes
         WHERE partition = $1 AND tbl = 'todos'
         ORDER BY row_id, commit_seq DESC, idx DESC) last
 WHERE op = 1
 ORDER BY todo_id`

// Beginner is a pool or a connection: SeedLog runs its own transaction.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// SeedLog bulk-loads n commits of one todo change each into partition, as a
// writer at writerVersion would have written them: todos rotate over rows
// ids, owners over 7 users, and 1 change in 13 is a delete.
func SeedLog(ctx context.Context, conn Beginner, partition string, n, rows int, writerVersion int64) error {
	return SeedPartitions(ctx, conn, []string{partition}, n, rows, writerVersion)
}

// SeedPartitions is SeedLog for many partitions in one statement (a demo
// of 10^5 tenants seeds them all at once).
//
// It is a restore, not a push: one set-based statement moves each head by
// n, which the head-only triggers refuse to any writer, so it runs with
// session_replication_role = replica (triggers off, for this transaction
// only). That takes a superuser, as any restore of a dump does; the demo's
// throwaway database and the test harness connect as one.
func SeedPartitions(ctx context.Context, conn Beginner, partitions []string, n, rows int, writerVersion int64) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err != nil {
			return fmt.Errorf("todos: seeding the log is a bulk restore and needs a superuser: %w", err)
		}
		_, err := tx.Exec(ctx, `
WITH base AS (
  INSERT INTO sync_partitions AS p (partition, max_commit_seq) SELECT unnest($1::text[]), $2
  ON CONFLICT (partition) DO UPDATE SET max_commit_seq = p.max_commit_seq + $2
  RETURNING partition, max_commit_seq - $2 AS start
), commits AS (
  INSERT INTO sync_commits
  SELECT b.partition, b.start + g, 'seed', 'seed-' || (b.start + g), 'u0', 0, $4 FROM base b, generate_series(1, $2::bigint) g
)
INSERT INTO sync_changes
SELECT b.partition, b.start + g, 0, 'todos', 't' || (g % $3), CASE WHEN g % 13 = 0 THEN 2 ELSE 1 END, 1, '{}',
       convert_to(json_build_object('title', 'todo ' || (b.start + g), 'owner', 'u' || (g % 7))::text, 'UTF8')
  FROM base b, generate_series(1, $2::bigint) g`, partitions, n, rows, writerVersion)
		return err
	})
}

// Schema is the example application's schema: v1 has todos(id, title); v2
// adds owner_id, the column the todos_by_owner projection reads.
func Schema(version int64) gosync.Schema {
	cols := []gosync.Column{{Name: "id", Type: gosync.TypeString}, {Name: "title", Type: gosync.TypeString}}
	if version >= 2 {
		cols = append(cols, gosync.Column{Name: "owner_id", Type: gosync.TypeString, Nullable: true})
	}
	return gosync.Schema{Version: version, Tables: []gosync.Table{{Name: "todos", Columns: cols}}}
}

// SchemaChange brings the application tables to version inside the bump
// transaction: the todos table, and at v2 its owner column and the
// projection table.
func SchemaChange(version int64) *gosync.SchemaChangeOptions {
	return &gosync.SchemaChangeOptions{DDL: func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "CREATE TABLE IF NOT EXISTS todos (id text PRIMARY KEY, title text NOT NULL)"); err != nil {
			return err
		}
		if version < 2 {
			return nil
		}
		if _, err := tx.Exec(ctx, "ALTER TABLE todos ADD COLUMN IF NOT EXISTS owner_id text"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, ProjectionDDL)
		return err
	}}
}
