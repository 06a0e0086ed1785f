-- The apply step of a projection of the operator's own, todo_titles
-- (partition, todo_id, title), for `gosync backfill --apply`: one statement,
-- run once per batch inside the batch's transaction, with
--   $1 text    the partition
--   $2 bigint  after: the batch covers the changes with commit_seq > $2
--   $3 bigint  through: ... and commit_seq <= $3
--   $4 text[]  the source tables (--sources)
-- The last change of each todo in the batch wins: deletes remove the row,
-- writes upsert it.
WITH last AS (
  SELECT DISTINCT ON (c.row_id) c.row_id, c.op, convert_from(c.payload, 'UTF8')::jsonb ->> 'title' AS title
    FROM sync_changes c
   WHERE c.partition = $1 AND c.tbl = ANY ($4) AND c.commit_seq > $2 AND c.commit_seq <= $3
   ORDER BY c.row_id, c.commit_seq DESC, c.idx DESC
), gone AS (
  DELETE FROM todo_titles t USING last
   WHERE t.partition = $1 AND t.todo_id = last.row_id AND last.op = 2
)
INSERT INTO todo_titles (partition, todo_id, title)
SELECT $1, last.row_id, last.title FROM last WHERE last.op = 1
ON CONFLICT (partition, todo_id) DO UPDATE SET title = EXCLUDED.title
