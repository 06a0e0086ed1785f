-- Push is sync_push, a client commit appended behind the serve check and
-- the writer fence: one statement, one round trip. Refusal is "" when the
-- commit was appended or replayed (Result holds the push result), else the
-- upstream refusal code, as ServeCheck's. Row versions are
-- int8[], which sqlc.yaml maps to []*int64: a nil element is NULL (no row
-- version). The alias list names the OUT columns for sqlc, the casts give
-- the generated struct its Go types ("" and 0 when NULL).
-- name: Push :one
SELECT coalesce(r.refusal, '')::text AS refusal,
       coalesce(r.stored_schema_version, 0)::bigint AS stored_schema_version,
       coalesce(r.checkpoint_partition, '')::text AS checkpoint_partition,
       coalesce(r.checkpoint_name, '')::text AS checkpoint_name,
       coalesce(r.result, 'null')::jsonb AS result
  FROM sync_push(@partition, @running_schema_version, sqlc.narg('expected_log_epoch')::text,
         @declared_names::text[], @declared_partitions::text[], @declared_partition_names::text[],
         @client_id, @client_commit_id, @actor_id, @created_at_ms,
         @tbls::text[], @row_ids::text[], @ops::smallint[], @row_versions::int8[],
         @scopes::jsonb[], @payloads::bytea[])
       AS r(refusal, stored_schema_version, checkpoint_partition, checkpoint_name, result);
