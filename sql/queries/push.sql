-- Row versions travel as bigint[] with -1 for "no row version" (NULL): the
-- generated []int64 cannot carry NULL elements.
-- name: PushCommit :one
SELECT sync_append_commit(@partition, @client_id, @client_commit_id, @actor_id,
  @created_at_ms, @writer_version, @tbls::text[], @row_ids::text[], @ops::smallint[],
  array_replace(@row_versions::bigint[], -1, NULL), @scopes::jsonb[], @payloads::bytea[])::jsonb AS result;

-- name: CurrentCursor :one
SELECT coalesce((SELECT max_commit_seq FROM sync_partitions WHERE partition = @partition), 0)::bigint AS cursor;

-- name: SegmentExpired :one
SELECT sync_segment_expired(@partition, @segment_schema_version)::boolean AS expired;
