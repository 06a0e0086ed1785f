-- The apply step of a projection of the operator's own, todo_titles
-- (partition, todo_id, title), for `gosync backfill --apply`: one statement,
-- run once per batch inside the batch's transaction, with
--   $1 text    the partition
--   $2 bigint  after: the batch covers the changes with commit_seq > $2
--   $3 bigint  through: ... and commit_seq <= $3
--   $4 text[]  the source tables (--sources)
-- Payloads are row codec bytes (what the upstream server and gosync write),
-- each in the layout of the version that wrote it: a bump re-encodes the
-- current rows, never the log. sync_decode_logged decodes a change with its
-- commit's writer_version's layout (sync_schema_layouts; a commit of an old
-- upstream server without writer_version: the newest recorded layout its
-- payload decodes under). The last change of each todo in the batch wins:
-- deletes remove the row, writes upsert it.
WITH last AS (
  SELECT DISTINCT ON (c.row_id) c.row_id, c.op, c.tbl, c.payload, k.writer_version
    FROM sync_changes c
    JOIN sync_commits k ON k.partition = c.partition AND k.commit_seq = c.commit_seq
   WHERE c.partition = $1 AND c.tbl = ANY ($4) AND c.commit_seq > $2 AND c.commit_seq <= $3
   ORDER BY c.row_id, c.commit_seq DESC, c.idx DESC
), gone AS (
  DELETE FROM todo_titles t USING last
   WHERE t.partition = $1 AND t.todo_id = last.row_id AND last.op = 2
)
INSERT INTO todo_titles (partition, todo_id, title)
SELECT $1, last.row_id, sync_decode_logged(last.tbl, last.writer_version, last.payload) ->> 'title'
  FROM last WHERE last.op = 1
ON CONFLICT (partition, todo_id) DO UPDATE SET title = EXCLUDED.title
