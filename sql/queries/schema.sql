-- The schema marker and the schema-bump transaction (sync_begin_schema_change,
-- sync_set_schema_version, sync_install_checkpoints) and the start-up checks.

-- name: GetSchemaMeta :one
SELECT * FROM sync_schema_meta WHERE id = 1;

-- name: BeginSchemaChange :exec
SELECT sync_begin_schema_change();

-- name: SetSchemaVersion :exec
SELECT sync_set_schema_version(@schema_version, @layouts);

-- InstallCheckpoints installs declarations by pair (partitions[i], names[i])
-- and, for each of all_names, one in every partition of sync_partitions (the
-- bump holds sync_partitions in EXCLUSIVE mode: the list cannot change under
-- it). Both ARRAY subqueries read the same snapshot in the same order.
-- name: InstallCheckpoints :one
SELECT sync_install_checkpoints(
  @partitions::text[] || ARRAY(SELECT p.partition FROM sync_partitions p CROSS JOIN unnest(@all_names::text[]) AS a(n)
                               ORDER BY a.n, p.partition),
  @names::text[] || ARRAY(SELECT a.n FROM sync_partitions p CROSS JOIN unnest(@all_names::text[]) AS a(n)
                          ORDER BY a.n, p.partition),
  @schema_version, sqlc.narg('now_ms')::bigint)::integer AS installed;

-- The first checkpoint of a version that is not activated and not declared
-- (by name for every partition, or by pair), set-based: the declarations
-- travel as arrays, the pairs are one hashed anti-join.
-- name: FirstUndeclaredIncomplete :one
SELECT c.partition, c.name FROM sync_backfill_checkpoints c
 WHERE c.schema_version = @schema_version AND c.state <> 'activated'
   AND c.name <> ALL (@declared_names::text[])
   AND (c.partition, c.name) NOT IN (
         SELECT (@declared_partitions::text[])[i], (@declared_partition_names::text[])[i]
           FROM generate_subscripts(@declared_partitions::text[], 1) AS i)
 ORDER BY c.partition, c.name
 LIMIT 1;

-- PhysicalColumns resolves the table through to_regclass, which follows the
-- session's search_path exactly as unqualified queries do (current_schema()
-- names only the first schema and would miss a table found later on the path).
-- name: PhysicalColumns :many
SELECT a.attname::text AS column_name
  FROM pg_catalog.pg_attribute a
 WHERE a.attrelid = to_regclass(@table_name::text) AND a.attnum > 0 AND NOT a.attisdropped
 ORDER BY a.attnum;

-- SetLocalLockTimeout bounds lock waits for the rest of the transaction.
-- name: SetLocalLockTimeout :exec
SELECT set_config('lock_timeout', @timeout::text, true);
