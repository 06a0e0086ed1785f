-- name: ServeGate :one
SELECT g.stored_schema_version::bigint AS stored_schema_version,
       g.log_epoch AS log_epoch,
       g.pending::jsonb AS pending
  FROM sync_serve_gate(@partition, @running_schema_version) AS g;

-- name: BeginSchemaChange :exec
SELECT sync_begin_schema_change();
