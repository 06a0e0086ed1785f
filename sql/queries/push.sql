-- Appending a client commit (sync_push).

-- Push is sync_push: one statement, one round trip. Row versions travel as
-- bigint[] with -1 for "no row version" (NULL): the generated []int64
-- cannot carry NULL elements. The alias list names the
-- OUT columns for sqlc, the casts give the generated struct its Go types.
-- name: Push :one
SELECT coalesce(r.refusal, '')::text AS refusal,
       coalesce(r.stored_schema_version, 0)::bigint AS stored_schema_version,
       coalesce(r.checkpoint_partition, '')::text AS checkpoint_partition,
       coalesce(r.checkpoint_name, '')::text AS checkpoint_name,
       coalesce(r.result, 'null')::jsonb AS result
  FROM sync_push(@partition, @running_schema_version, sqlc.narg('expected_log_epoch')::text,
         @declared_names::text[], @declared_partitions::text[], @declared_partition_names::text[],
         @client_id, @client_commit_id, @actor_id, @created_at_ms,
         @tbls::text[], @row_ids::text[], @ops::smallint[], array_replace(@row_versions::bigint[], -1, NULL),
         @scopes::jsonb[], @payloads::bytea[])
       AS r(refusal, stored_schema_version, checkpoint_partition, checkpoint_name, result);
