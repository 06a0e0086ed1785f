-- The barrier's security posture in one query, for a DBA:
--   SELECT * FROM sync_security_audit() WHERE NOT ok;
-- Each row is one enforced rule: the head-only and fence triggers exist and
-- fire, the fence trigger reads its tables by qualified name, the privileged
-- functions are SECURITY DEFINER with a pinned search_path and not
-- executable by PUBLIC, every other function pins its path, no sync role can
-- write the fence, the checkpoints, the marker, the horizon or the epoch or
-- lock the partitions table, and PUBLIC cannot create objects on the path.
CREATE OR REPLACE FUNCTION sync_security_audit()
RETURNS TABLE (check_name text, ok boolean, detail text)
LANGUAGE sql
STABLE
AS $$
  WITH schema AS (
    SELECT c.relnamespace AS oid, c.relnamespace::regnamespace::text AS name
      FROM pg_class c WHERE c.oid = 'sync_commits'::regclass
  ), triggers AS (
    SELECT t.tgname, c.relname, t.tgenabled, p.prosrc, p.proconfig, c.relowner
      FROM pg_trigger t
      JOIN pg_class c ON c.oid = t.tgrelid
      JOIN pg_proc p ON p.oid = t.tgfoid
     WHERE NOT t.tgisinternal AND c.relnamespace = (SELECT oid FROM schema)
  ), expected(tgname, relname) AS (
    VALUES ('sync_commits_writer_fence', 'sync_commits'),
           ('sync_changes_follow_commit', 'sync_changes'),
           ('sync_change_scopes_follow_commit', 'sync_change_scopes'),
           ('sync_partitions_guard_insert', 'sync_partitions'),
           ('sync_partitions_guard_update', 'sync_partitions')
  ), functions AS (
    SELECT p.oid, p.proname, p.prosecdef, p.proconfig,
           EXISTS (SELECT 1 FROM unnest(p.proconfig) s WHERE s LIKE 'search_path=pg_catalog, %pg_temp') AS pinned
      FROM pg_proc p
     WHERE p.pronamespace = (SELECT oid FROM schema) AND p.proname LIKE 'sync\_%'
  ), privileged AS (
    SELECT * FROM functions
     WHERE proname IN ('sync_install_checkpoint', 'sync_declare_checkpoint', 'sync_claim_checkpoint',
                       'sync_advance_checkpoint', 'sync_activate_checkpoint', 'sync_set_schema_version',
                       'sync_begin_schema_change', 'sync_prune_log', 'sync_rotate_log_epoch')
  ), roles AS (
    SELECT r.oid, r.rolname FROM pg_roles r
     WHERE r.rolname IN ('sync_reader', 'sync_writer', 'sync_backfill', 'sync_admin')
  ), writers AS (
    SELECT r.rolname FROM roles r
     WHERE has_table_privilege(r.oid, 'sync_writer_fence', 'INSERT, UPDATE, DELETE, TRUNCATE')
        OR has_table_privilege(r.oid, 'sync_backfill_checkpoints', 'INSERT, UPDATE, DELETE, TRUNCATE')
        OR has_table_privilege(r.oid, 'sync_schema_meta', 'INSERT, UPDATE, DELETE, TRUNCATE')
        OR has_column_privilege(r.oid, 'sync_partitions', 'horizon_seq', 'UPDATE')
        OR has_column_privilege(r.oid, 'sync_partitions', 'partition', 'UPDATE')
        OR has_column_privilege(r.oid, 'sync_partition_registry', 'log_epoch', 'UPDATE')
        OR has_column_privilege(r.oid, 'sync_partition_registry', 'epoch_required', 'UPDATE')
        OR has_table_privilege(r.oid, 'sync_partitions', 'UPDATE, DELETE, TRUNCATE')
        OR has_table_privilege(r.oid, 'sync_partition_registry', 'UPDATE, DELETE, TRUNCATE')
        OR has_table_privilege(r.oid, 'sync_commits', 'UPDATE, DELETE, TRUNCATE')
        OR has_table_privilege(r.oid, 'sync_changes', 'UPDATE, DELETE, TRUNCATE')
  ), creatable AS (
    SELECT n.nspname FROM pg_namespace n
     WHERE (n.oid = (SELECT oid FROM schema) OR n.nspname = 'public')
       AND has_schema_privilege('public', n.oid, 'CREATE')
  )
  SELECT 'fence trigger present',
         EXISTS (SELECT 1 FROM triggers WHERE tgname = 'sync_commits_writer_fence' AND relname = 'sync_commits'),
         'sync_commits_writer_fence on sync_commits'
  UNION ALL
  SELECT 'fence trigger enabled',
         coalesce((SELECT tgenabled IN ('O', 'A') FROM triggers WHERE tgname = 'sync_commits_writer_fence'), false),
         'tgenabled = ' || coalesce((SELECT tgenabled::text FROM triggers WHERE tgname = 'sync_commits_writer_fence'), 'none')
           || ' (O: fires normally, A: always; D: disabled, R: only under session_replication_role = replica)'
  UNION ALL
  SELECT 'head-only triggers present and enabled',
         NOT EXISTS (SELECT 1 FROM expected e LEFT JOIN triggers t USING (tgname, relname)
                      WHERE t.tgenabled IS NULL OR t.tgenabled NOT IN ('O', 'A')),
         'missing or disabled: ' || coalesce((SELECT string_agg(e.tgname || ' on ' || e.relname, ', ')
                                                FROM expected e LEFT JOIN triggers t USING (tgname, relname)
                                               WHERE t.tgenabled IS NULL OR t.tgenabled NOT IN ('O', 'A')), 'none')
  UNION ALL
  SELECT 'fence function reads its tables by qualified name',
         coalesce((SELECT prosrc LIKE '%' || (SELECT name FROM schema) || '.sync_writer_fence %'
                      AND prosrc LIKE '%' || (SELECT name FROM schema) || '.sync_partitions %'
                      AND prosrc NOT LIKE '% sync_writer_fence %'
                     FROM triggers WHERE tgname = 'sync_commits_writer_fence'), false),
         'a fence body reading unqualified names follows the caller''s search_path (an upstream migrate() replaces it so)'
  UNION ALL
  SELECT 'fence table owned by a non-sync role',
         coalesce((SELECT pg_get_userbyid(relowner) NOT IN ('sync_reader', 'sync_writer', 'sync_backfill', 'sync_admin')
                     FROM triggers WHERE tgname = 'sync_commits_writer_fence'), false),
         'owner ' || coalesce((SELECT pg_get_userbyid(relowner) FROM triggers WHERE tgname = 'sync_commits_writer_fence'), 'unknown')
  UNION ALL
  SELECT 'privileged functions are SECURITY DEFINER with a pinned search_path',
         count(*) = 9 AND bool_and(prosecdef AND pinned),
         count(*) || ' of 9 found; not hardened: ' || coalesce(string_agg(proname, ', ') FILTER (WHERE NOT prosecdef OR NOT pinned), 'none')
    FROM privileged
  UNION ALL
  SELECT 'PUBLIC cannot execute privileged functions',
         NOT coalesce(bool_or(has_function_privilege('public', oid, 'EXECUTE')), false),
         'executable by PUBLIC: ' || coalesce(string_agg(proname, ', ') FILTER (WHERE has_function_privilege('public', oid, 'EXECUTE')), 'none')
    FROM privileged
  UNION ALL
  SELECT 'functions pin their search_path (but the inlined ones and the row triggers)',
         coalesce(bool_and(pinned), true),
         'not pinned: ' || coalesce(string_agg(proname, ', '), 'none')
    FROM functions WHERE NOT pinned
     AND proname NOT IN ('sync_serve_gate', 'sync_xid_is_current', 'sync_changes_follow_commit')
  UNION ALL
  SELECT 'sync roles cannot write the fence, the checkpoints, the marker, the horizon or the epoch',
         NOT EXISTS (SELECT 1 FROM writers),
         'roles with write access: ' || coalesce((SELECT string_agg(rolname, ', ') FROM writers), 'none')
  UNION ALL
  SELECT 'PUBLIC cannot create objects in the sync schema or public',
         NOT EXISTS (SELECT 1 FROM creatable),
         'CREATE granted to PUBLIC on: ' || coalesce((SELECT string_agg(nspname, ', ') FROM creatable), 'none')
$$;
