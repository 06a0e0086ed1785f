-- GetSchemaMeta reads the schema marker (sync_schema_meta); pgx.ErrNoRows
-- before the first schema bump.
-- name: GetSchemaMeta :one
SELECT * FROM sync_schema_meta WHERE id = 1;

-- BeginSchemaChange is sync_begin_schema_change, the first statement of a
-- schema-bump transaction: it takes the migration lock writers wait on.
-- name: BeginSchemaChange :exec
SELECT sync_begin_schema_change();

-- SetSchemaVersion is sync_set_schema_version: it writes the schema marker
-- inside a schema-bump transaction, under the marker rules.
-- name: SetSchemaVersion :exec
SELECT sync_set_schema_version(@schema_version, @layouts);

-- InstallCheckpoints is sync_install_checkpoints: it declares checkpoints by
-- pair (partitions[i], names[i]) in a schema bump and returns how many.
-- name: InstallCheckpoints :one
SELECT sync_install_checkpoints(@partitions::text[], @names::text[], @schema_version,
  sqlc.narg('now_ms')::bigint)::integer AS installed;

-- InstallAllPartitions is sync_install_all_partitions: it declares projections for every partition, existing
-- and created later (sync_install_all_partitions).
-- name: InstallAllPartitions :one
SELECT sync_install_all_partitions(@names::text[], @schema_version, sqlc.narg('now_ms')::bigint)::integer AS installed;

-- SchemaChangeBlockers is sync_schema_change_blockers: who holds a lock the bump's migration lock
-- conflicts with (sync_schema_change_blockers), after its wait timed out;
-- pid 0 is a prepared transaction.
-- name: SchemaChangeBlockers :many
SELECT coalesce(b.pid, 0)::integer AS pid, coalesce(b.prepared_gid, '')::text AS prepared_gid,
       coalesce(b.role, '')::text AS role, b.lock_modes::text AS lock_modes
  FROM sync_schema_change_blockers() b;

-- CheckSchemaVersion is sync_check_schema_version, the marker rules (sync_check_schema_version): 'absent',
-- 'older', 'same' or 'legacy' (an older gosync's marker to rewrite), else a refusal with the upstream words (55000).
-- name: CheckSchemaVersion :one
SELECT sync_check_schema_version(@schema_version::bigint, @layouts::text)::text AS relation;

-- FirstUndeclaredCheckpoint is sync_first_undeclared_checkpoint: the first
-- pending checkpoint of a version that the caller did not declare (by name
-- for every partition, or by pair), the walk sync_serve_check runs too;
-- pgx.ErrNoRows when there is none.
-- name: FirstUndeclaredCheckpoint :one
SELECT u.checkpoint_partition::text AS partition, u.checkpoint_name::text AS name
  FROM sync_first_undeclared_checkpoint(@schema_version::integer, @declared_names::text[],
         @declared_partitions::text[], @declared_partition_names::text[]) u
 WHERE u.checkpoint_name IS NOT NULL;

-- PhysicalColumns lists a table's columns in order. It resolves the table through to_regclass, which follows the
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
