-- The DBA's audit of the barrier's defences: one row per check, ok or not,
-- with what was found. `SELECT * FROM sync_security_audit() WHERE NOT ok;`
-- returns nothing on a healthy database.
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
