-- Least privilege: the barrier cannot be bypassed by the accounts that use it.
--
-- Four NOLOGIN group roles a DBA grants to login roles (created only when
-- missing: a DBA may create them beforehand, and then the migrating user
-- needs no CREATEROLE):
--   sync_reader   read the log, the status view, the gate
--   sync_writer   a sync server: push (append-only log), registry, clients
--   sync_backfill claim, advance and activate checkpoints
--   sync_admin    declare checkpoints, bump the schema, prune, rotate epochs
-- Functions that do more than their caller may (raise a fence, move a
-- checkpoint, write the marker, prune) are SECURITY DEFINER; every function
-- but the inlined serve gate gets a pinned search_path (pg_catalog, this
-- schema, pg_temp last), so a table or function planted earlier on a
-- caller's path, or a temp table, cannot change what they do. PUBLIC loses
-- EXECUTE on all of them. See SECURITY.md.

-- +goose Up
-- The audit function is a verbatim copy of sql/functions/sync_security_audit.sql.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_security_audit()
RETURNS TABLE (check_name text, ok boolean, detail text)
LANGUAGE sql
STABLE
AS $$
  WITH fence AS (
    SELECT t.tgenabled, c.relowner, p.proconfig, p.prosecdef
      FROM pg_trigger t
      JOIN pg_class c ON c.oid = t.tgrelid
      JOIN pg_proc p ON p.oid = t.tgfoid
     WHERE t.tgname = 'sync_commits_writer_fence' AND c.relname = 'sync_commits'
       AND c.relnamespace = p.pronamespace
  ), privileged AS (
    SELECT p.oid, p.proname, p.prosecdef, p.proconfig
      FROM pg_proc p
     WHERE p.pronamespace = (SELECT c.relnamespace FROM pg_class c WHERE c.oid = 'sync_commits'::regclass)
       AND p.proname IN ('sync_install_checkpoint', 'sync_declare_checkpoint', 'sync_claim_checkpoint',
                         'sync_advance_checkpoint', 'sync_activate_checkpoint', 'sync_set_schema_version',
                         'sync_begin_schema_change', 'sync_prune_log', 'sync_rotate_log_epoch')
  ), writers AS (
    SELECT r.rolname
      FROM pg_roles r
     WHERE r.rolname IN ('sync_reader', 'sync_writer', 'sync_backfill', 'sync_admin')
       AND (has_table_privilege(r.oid, 'sync_writer_fence', 'UPDATE, DELETE, TRUNCATE')
         OR has_table_privilege(r.oid, 'sync_backfill_checkpoints', 'UPDATE, DELETE, TRUNCATE')
         OR has_table_privilege(r.oid, 'sync_schema_meta', 'UPDATE, DELETE, TRUNCATE'))
  )
  SELECT 'fence trigger present', EXISTS (SELECT 1 FROM fence),
         CASE WHEN EXISTS (SELECT 1 FROM fence) THEN 'sync_commits_writer_fence on sync_commits'
              ELSE 'the trigger sync_commits_writer_fence is missing' END
  UNION ALL
  SELECT 'fence trigger enabled', coalesce((SELECT tgenabled IN ('O', 'A') FROM fence), false),
         'tgenabled = ' || coalesce((SELECT tgenabled::text FROM fence), 'none')
           || ' (O: fires normally, A: always; D: disabled, R: only under session_replication_role = replica)'
  UNION ALL
  SELECT 'fence function search_path pinned',
         coalesce((SELECT EXISTS (SELECT 1 FROM unnest(proconfig) s WHERE s LIKE 'search_path=pg_catalog, %pg_temp') FROM fence), false),
         coalesce((SELECT array_to_string(proconfig, ' ') FROM fence), 'no settings')
  UNION ALL
  SELECT 'fence table owned by a non-sync role',
         coalesce((SELECT pg_get_userbyid(relowner) NOT IN ('sync_reader', 'sync_writer', 'sync_backfill', 'sync_admin') FROM fence), false),
         'owner ' || coalesce((SELECT pg_get_userbyid(relowner) FROM fence), 'unknown')
  UNION ALL
  SELECT 'privileged functions are SECURITY DEFINER with a pinned search_path',
         count(*) = 9 AND bool_and(prosecdef AND EXISTS (SELECT 1 FROM unnest(proconfig) s WHERE s LIKE 'search_path=pg_catalog, %pg_temp')),
         count(*) || ' of 9 found; not hardened: ' || coalesce(string_agg(proname, ', ') FILTER (WHERE NOT prosecdef OR proconfig IS NULL), 'none')
    FROM privileged
  UNION ALL
  SELECT 'PUBLIC cannot execute privileged functions',
         NOT coalesce(bool_or(has_function_privilege('public', oid, 'EXECUTE')), false),
         'executable by PUBLIC: ' || coalesce(string_agg(proname, ', ') FILTER (WHERE has_function_privilege('public', oid, 'EXECUTE')), 'none')
    FROM privileged
  UNION ALL
  SELECT 'sync roles cannot write the fence, the checkpoints or the marker',
         NOT EXISTS (SELECT 1 FROM writers),
         'roles with write access: ' || coalesce((SELECT string_agg(rolname, ', ') FROM writers), 'none')
$$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $$
DECLARE
  r text;
BEGIN
  FOREACH r IN ARRAY ARRAY['sync_reader', 'sync_writer', 'sync_backfill', 'sync_admin'] LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r) THEN
      BEGIN
        EXECUTE format('CREATE ROLE %I NOLOGIN', r);
      EXCEPTION WHEN duplicate_object OR unique_violation THEN
        NULL; -- created concurrently by another database's migration
      END;
    END IF;
  END LOOP;
END;
$$;
-- +goose StatementEnd

GRANT sync_reader TO sync_writer, sync_backfill, sync_admin;

-- +goose StatementBegin
DO $$
DECLARE
  f regprocedure;
  definer text[] := ARRAY['sync_install_checkpoint', 'sync_declare_checkpoint', 'sync_claim_checkpoint',
    'sync_advance_checkpoint', 'sync_activate_checkpoint', 'sync_set_schema_version',
    'sync_begin_schema_change', 'sync_prune_log', 'sync_rotate_log_epoch'];
BEGIN
  FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
            WHERE p.pronamespace = current_schema()::regnamespace
              AND (p.proname LIKE 'sync\_%' OR p.proname = 'syncular_writer_fence')
  LOOP
    EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
    IF f::text NOT LIKE 'sync_serve_gate(%' THEN
      EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, %I, pg_temp', f, current_schema());
    END IF;
    IF split_part(f::text, '(', 1) = ANY (definer) THEN
      EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER', f);
    END IF;
  END LOOP;
END;
$$;
-- +goose StatementEnd

REVOKE ALL ON sync_partitions, sync_partition_registry, sync_row_scopes, sync_commits, sync_changes,
  sync_change_scopes, sync_push_results, sync_reactions, sync_clients, sync_blob_refs, sync_tombstones,
  sync_schema_meta, sync_backfill_checkpoints, sync_writer_fence, sync_barrier_status FROM PUBLIC;

GRANT SELECT ON sync_partitions, sync_partition_registry, sync_row_scopes, sync_commits, sync_changes,
  sync_change_scopes, sync_push_results, sync_reactions, sync_clients, sync_blob_refs, sync_tombstones,
  sync_schema_meta, sync_backfill_checkpoints, sync_writer_fence, sync_barrier_status TO sync_reader;
GRANT EXECUTE ON FUNCTION sync_security_audit(), sync_now_ms(), sync_assert_key(text, text),
  sync_assert_nonnegative(text, bigint, bigint), sync_assert_sources(text[]),
  sync_serve_gate(text, integer), sync_segment_expired(text, bigint),
  sync_source_coverage_seq(text, text[]), sync_source_changes_above(text, text[], bigint) TO sync_reader;

-- The writer appends to the log; it never updates or deletes it, and has no
-- write access at all to the fence, the checkpoints or the schema marker.
GRANT INSERT ON sync_commits, sync_changes, sync_change_scopes, sync_push_results TO sync_writer;
GRANT INSERT, UPDATE ON sync_partitions, sync_partition_registry TO sync_writer;
GRANT INSERT, UPDATE, DELETE ON sync_clients, sync_row_scopes, sync_tombstones, sync_blob_refs,
  sync_reactions TO sync_writer;
GRANT EXECUTE ON FUNCTION sync_lock_partition(text), sync_touch_partition(text, text, bigint),
  sync_append_commit(text, text, text, text, bigint, bigint, text[], text[], smallint[], bigint[], jsonb[], bytea[])
  TO sync_writer;

GRANT EXECUTE ON FUNCTION sync_claim_checkpoint(text, text, integer, bigint),
  sync_advance_checkpoint(text, text, bigint, bigint, bigint, bigint),
  sync_activate_checkpoint(text, text, bigint, bigint, text[], bigint) TO sync_backfill, sync_admin;

GRANT EXECUTE ON FUNCTION sync_declare_checkpoint(text, text, integer, bigint),
  sync_install_checkpoint(text, text, integer, bigint), sync_set_schema_version(bigint, text),
  sync_begin_schema_change(), sync_prune_log(text, bigint), sync_rotate_log_epoch(text, text, bigint)
  TO sync_admin;

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
  f regprocedure;
BEGIN
  FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
            WHERE p.pronamespace = current_schema()::regnamespace
              AND (p.proname LIKE 'sync\_%' OR p.proname = 'syncular_writer_fence')
  LOOP
    EXECUTE format('ALTER FUNCTION %s RESET search_path', f);
    EXECUTE format('ALTER FUNCTION %s SECURITY INVOKER', f);
    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO PUBLIC', f);
    EXECUTE format('REVOKE ALL ON FUNCTION %s FROM sync_reader, sync_writer, sync_backfill, sync_admin', f);
  END LOOP;
END;
$$;
-- +goose StatementEnd
REVOKE ALL ON sync_partitions, sync_partition_registry, sync_row_scopes, sync_commits, sync_changes,
  sync_change_scopes, sync_push_results, sync_reactions, sync_clients, sync_blob_refs, sync_tombstones,
  sync_schema_meta, sync_backfill_checkpoints, sync_writer_fence, sync_barrier_status
  FROM sync_reader, sync_writer, sync_backfill, sync_admin;
DROP FUNCTION sync_security_audit();
-- The roles are cluster-wide and may serve other databases: they stay.
