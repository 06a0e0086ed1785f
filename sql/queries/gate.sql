-- ServeCheck is sync_serve_check, the serve gate's refusal rule: Refusal is
-- "" when the partition may be served at running_schema_version, else the
-- upstream refusal code, with the checkpoint that closes the gate ("" when
-- none). The alias list names the OUT columns for sqlc; the casts give the
-- generated struct its Go types.
-- name: ServeCheck :one
SELECT coalesce(c.refusal, '')::text AS refusal,
       c.stored_schema_version::bigint AS stored_schema_version,
       coalesce(c.checkpoint_partition, '')::text AS checkpoint_partition,
       coalesce(c.checkpoint_name, '')::text AS checkpoint_name
  FROM sync_serve_check(@partition, @running_schema_version, sqlc.narg('expected_log_epoch')::text,
         @declared_names::text[], @declared_partitions::text[], @declared_partition_names::text[])
       AS c(refusal, stored_schema_version, log_epoch, checkpoint_partition, checkpoint_name);

-- ServeCheckAndCursor is ServeCheck and the partition's cursor and the partition's cursor in one
-- statement, so ReadAuthoritative takes its snapshot and reads both in one
-- round trip (in REPEATABLE READ the cursor is that of the whole snapshot).
-- name: ServeCheckAndCursor :one
SELECT coalesce(c.refusal, '')::text AS refusal,
       c.stored_schema_version::bigint AS stored_schema_version,
       coalesce(c.checkpoint_partition, '')::text AS checkpoint_partition,
       coalesce(c.checkpoint_name, '')::text AS checkpoint_name,
       coalesce((SELECT p.max_commit_seq FROM sync_partitions p WHERE p.partition = @partition), 0)::bigint AS cursor
  FROM sync_serve_check(@partition, @running_schema_version, sqlc.narg('expected_log_epoch')::text,
         @declared_names::text[], @declared_partitions::text[], @declared_partition_names::text[])
       AS c(refusal, stored_schema_version, log_epoch, checkpoint_partition, checkpoint_name);

-- ServeGate is sync_serve_gate, the full gate read for DBAs and diagnostics:
-- the stored schema version, the log epoch (Registered false: none) and
-- every pending checkpoint of the running version as JSON (it grows with
-- them: request paths use ServeCheck). The column alias list names the TABLE
-- function's columns for sqlc, which cannot see them; the casts give the generated struct its Go types (a cast
-- reads as NOT NULL to sqlc, hence the explicit registered flag).
-- name: ServeGate :one
SELECT g.stored_schema_version::bigint AS stored_schema_version,
       coalesce(g.log_epoch, '')::text AS log_epoch,
       (g.log_epoch IS NOT NULL)::boolean AS registered,
       g.pending::jsonb AS pending
  FROM sync_serve_gate(@partition, @running_schema_version) AS g(stored_schema_version, log_epoch, pending);

-- SegmentExpired is sync_segment_expired: a segment minted at
-- segment_schema_version is expired when the partition has a checkpoint of
-- a newer version.
-- name: SegmentExpired :one
SELECT sync_segment_expired(@partition, @segment_schema_version)::boolean AS expired;
