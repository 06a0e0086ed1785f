-- The column alias list names the TABLE function's columns for sqlc, which
-- cannot see them; the casts give the generated struct its Go types (a cast
-- reads as NOT NULL to sqlc, hence the explicit registered flag).
-- name: ServeGate :one
SELECT g.stored_schema_version::bigint AS stored_schema_version,
       coalesce(g.log_epoch, '')::text AS log_epoch,
       (g.log_epoch IS NOT NULL)::boolean AS registered,
       g.pending::jsonb AS pending
  FROM sync_serve_gate(@partition, @running_schema_version) AS g(stored_schema_version, log_epoch, pending);

-- name: BeginSchemaChange :exec
SELECT sync_begin_schema_change();
