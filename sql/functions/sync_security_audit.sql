-- The barrier's security posture in one query, for a DBA:
--   SELECT * FROM sync_security_audit() WHERE NOT ok;
--   SELECT * FROM sync_security_audit() WHERE severity <> 'ok';  -- warnings too
-- One row per check (one per offending object when a check fails), each
-- with a severity: 'fail' (ok is false: a rule is broken), 'warn' (ok, but a
-- setting allows a known hazard), 'info' (ok: for reading) or 'ok'.
-- Most checks compare the catalog with what the migrations installed
-- (sync_installed_catalog, written by sync_record_installed_catalog() at the
-- end of every migration): every function's full definition, every owner and
-- grant, the triggers and the members of the owner role (the role that ran
-- the migrations: the owner of sync_record_installed_catalog()). The rest
-- read the catalog as it is: the triggers fire, the privileged functions
-- are hardened, no sync role can write the barrier's tables or create
-- objects next to them, memberships that lift a lower role, the schemas'
-- owners, prepared transactions, and who can bypass the barrier at all. Catalog reads only: nothing grows with the log or the
-- number of partitions. The fence and head rule are gosync's trigger
-- sync_commits_writer_guard; syncular_writer_fence() is upstream's name,
-- which an upstream 0.23 boot re-creates with its own body: the row
-- 'fence function syncular_writer_fence' says whose body it has, and
-- upstream's body is not a failed definition (info: it checks the fence a
-- second time, and migrate up restores gosync's).
CREATE OR REPLACE FUNCTION sync_security_audit()
RETURNS TABLE (check_name text, ok boolean, detail text, severity text, object text)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
  WITH RECURSIVE schema AS (
    SELECT c.relnamespace AS oid, c.relnamespace::regnamespace::text AS name
      FROM pg_class c WHERE c.oid = 'sync_commits'::regclass
  ), triggers AS (
    SELECT t.tgname, c.relname, t.tgenabled, p.prosrc, p.proconfig, c.relowner
      FROM pg_trigger t
      JOIN pg_class c ON c.oid = t.tgrelid
      JOIN pg_proc p ON p.oid = t.tgfoid
     WHERE NOT t.tgisinternal AND c.relnamespace = (SELECT oid FROM schema)
  ), fence_body AS (
    -- Whose body syncular_writer_fence() has: gosync's (as recorded),
    -- upstream 0.23's (its boot statement, whatever its whitespace), or
    -- another.
    SELECT CASE WHEN c.definition IS NOT DISTINCT FROM r.definition THEN 'gosync''s body'
                WHEN NOT p.prosecdef AND p.proconfig IS NULL
                     AND regexp_replace(p.prosrc, '\s', '', 'g')
                         = 'BEGINIFEXISTS(SELECT1FROMsync_writer_fenceWHEREpartition=NEW.partitionAND(NEW.writer_versionISNULLORNEW.writer_version<required_writer_version))THENRAISEEXCEPTION''sync.storage.writer_fence_rejected'';ENDIF;RETURNNEW;END;'
                  THEN 'upstream''s body'
                ELSE 'another body' END AS whose
      FROM pg_proc p
      LEFT JOIN sync_catalog_snapshot() c ON c.kind = 'function' AND c.object = 'syncular_writer_fence()'
      LEFT JOIN sync_installed_catalog r ON r.kind = 'function' AND r.object = 'syncular_writer_fence()'
     WHERE p.oid = to_regprocedure('syncular_writer_fence()')
  ), expected(tgname, relname) AS (
    VALUES ('sync_commits_writer_guard', 'sync_commits'),
           ('sync_commits_writer_fence', 'sync_commits'),
           ('sync_commits_deleted', 'sync_commits'),
           ('sync_changes_deleted', 'sync_changes'),
           ('sync_change_scopes_deleted', 'sync_change_scopes'),
           ('sync_commits_truncated', 'sync_commits'),
           ('sync_changes_truncated', 'sync_changes'),
           ('sync_change_scopes_truncated', 'sync_change_scopes'),
           ('sync_changes_follow_commit', 'sync_changes'),
           ('sync_change_scopes_follow_commit', 'sync_change_scopes'),
           ('sync_partitions_guard_insert', 'sync_partitions'),
           ('sync_partitions_guard_update', 'sync_partitions')
  ), functions AS (
    SELECT p.oid, p.proname, p.prosecdef, p.proconfig,
           EXISTS (SELECT 1 FROM unnest(p.proconfig) s WHERE s LIKE 'search_path=pg_catalog, %pg_temp') AS pinned
      FROM pg_proc p
     WHERE p.pronamespace = (SELECT oid FROM schema) AND p.proname LIKE 'sync\_%'
  ), rec AS (
    SELECT r.kind, r.object, r.owner, r.acl, r.definition, r.state, r.recorded_at FROM sync_installed_catalog r
  ), cur AS (
    SELECT s.kind, s.object, s.owner, s.acl, s.definition, s.state FROM sync_catalog_snapshot() s
  ), owner_role AS (
    -- The role that ran the migrations: the recorded owner of the recorder
    -- (changing an owner later does not move it).
    SELECT r.oid, r.rolname FROM pg_roles r
     WHERE r.rolname = coalesce((SELECT rec.owner FROM rec
                                  WHERE rec.kind = 'function' AND rec.object = 'sync_record_installed_catalog()'),
                                (SELECT pg_get_userbyid(p.proowner) FROM pg_proc p
                                  WHERE p.oid = to_regprocedure('sync_record_installed_catalog()')))
  ), privileged AS (
    -- SECURITY DEFINER now or in the record: a definer that lost the
    -- attribute is as wrong as one that gained it.
    SELECT f.* FROM functions f
     WHERE f.prosecdef
        OR EXISTS (SELECT 1 FROM rec WHERE rec.kind = 'function' AND rec.state = 'security definer'
                      AND rec.object = f.proname || '(' || pg_get_function_identity_arguments(f.oid) || ')')
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
        -- The every-partition declarations, the audit's own record, the
        -- epoch floor: state of the barrier like the fence.
        OR has_table_privilege(r.oid, 'sync_all_partition_checkpoints', 'INSERT, UPDATE, DELETE, TRUNCATE')
        OR has_table_privilege(r.oid, 'sync_installed_catalog', 'INSERT, UPDATE, DELETE, TRUNCATE')
        OR has_sequence_privilege(r.oid, 'sync_checkpoint_epoch_floor', 'UPDATE, USAGE')
  ), creatable AS (
    SELECT n.nspname FROM pg_namespace n
     WHERE (n.oid = (SELECT oid FROM schema) OR n.nspname = 'public')
       AND has_schema_privilege('public', n.oid, 'CREATE')
  ), closure(member, roleid) AS (
    -- Every (member, role) pair of pg_auth_members, transitively. Not
    -- pg_has_role: a superuser "has" every role.
    SELECT m.member, m.roleid FROM pg_auth_members m
    UNION
    SELECT m.member, c.roleid FROM pg_auth_members m JOIN closure c ON c.member = m.roleid
  ), schema_owners AS (
    -- On Postgres 15 public belongs to pg_database_owner: the database owner.
    SELECT n.oid, n.nspname,
           CASE WHEN n.nspowner = (SELECT r.oid FROM pg_roles r WHERE r.rolname = 'pg_database_owner')
                THEN (SELECT d.datdba FROM pg_database d WHERE d.datname = current_database())
                ELSE n.nspowner END AS owner,
           n.nspowner::regrole::text AS nspowner
      FROM pg_namespace n
     WHERE n.oid = (SELECT oid FROM schema) OR n.nspname = 'public'
  ), sync_members AS (
    SELECT c.member, string_agg(s.rolname, ', ' ORDER BY s.rolname) AS groups
      FROM closure c JOIN roles s ON s.oid = c.roleid
     WHERE c.member NOT IN (SELECT oid FROM roles)
     GROUP BY c.member
  ), bypass(oid, why) AS (
    SELECT r.oid, 'superuser' FROM pg_roles r WHERE r.rolsuper
    UNION ALL
    SELECT o.oid, 'the owner role' FROM owner_role o
    UNION ALL
    SELECT so.owner, 'owner of schema ' || so.nspname FROM schema_owners so
    UNION ALL
    -- Before Postgres 16, CREATEROLE may grant itself any non-superuser role.
    SELECT r.oid, 'CREATEROLE' FROM pg_roles r
     WHERE r.rolcreaterole AND NOT r.rolsuper AND current_setting('server_version_num')::int < 160000
  ), legacy(ord, check_name, ok, detail) AS (
    SELECT 0, 'the installed catalog is recorded',
           EXISTS (SELECT 1 FROM rec WHERE rec.kind = 'relation' AND rec.object = 'sync_commits'),
           format('%s functions, %s relations, %s triggers, %s members of the owner role recorded at %s; '
                  'every migration ends with SELECT sync_record_installed_catalog()',
                  (SELECT count(*) FROM rec WHERE rec.kind = 'function'), (SELECT count(*) FROM rec WHERE rec.kind = 'relation'),
                  (SELECT count(*) FROM rec WHERE rec.kind = 'trigger'), (SELECT count(*) FROM rec WHERE rec.kind = 'member'),
                  coalesce((SELECT max(rec.recorded_at)::text FROM rec), 'never'))
    UNION ALL
    SELECT 1, 'fence trigger present',
           (SELECT count(*) = 2 FROM triggers WHERE tgname IN ('sync_commits_writer_guard', 'sync_commits_writer_fence') AND relname = 'sync_commits'),
           'sync_commits_writer_guard (gosync''s: the fence and the head rule) and sync_commits_writer_fence (upstream''s) on sync_commits'
    UNION ALL
    SELECT 2, 'fence trigger enabled',
           coalesce((SELECT bool_and(tgenabled IN ('O', 'A')) FROM triggers WHERE tgname IN ('sync_commits_writer_guard', 'sync_commits_writer_fence')), false),
           'tgenabled = ' || coalesce((SELECT string_agg(tgname || ' ' || tgenabled::text, ', ' ORDER BY tgname) FROM triggers
                                        WHERE tgname IN ('sync_commits_writer_guard', 'sync_commits_writer_fence')), 'none')
             || ' (O: fires normally, A: always; D: disabled, R: only under session_replication_role = replica)'
    UNION ALL
    SELECT 3, 'head-only triggers present and enabled',
           NOT EXISTS (SELECT 1 FROM expected e LEFT JOIN triggers t USING (tgname, relname)
                        WHERE t.tgenabled IS NULL OR t.tgenabled NOT IN ('O', 'A')),
           'missing or disabled: ' || coalesce((SELECT string_agg(e.tgname || ' on ' || e.relname, ', ')
                                                  FROM expected e LEFT JOIN triggers t USING (tgname, relname)
                                                 WHERE t.tgenabled IS NULL OR t.tgenabled NOT IN ('O', 'A')), 'none')
    UNION ALL
    SELECT 4, 'fence function reads its tables by qualified name',
           coalesce((SELECT prosrc LIKE '%' || (SELECT name FROM schema) || '.sync_writer_fence %'
                        AND prosrc LIKE '%' || (SELECT name FROM schema) || '.sync_partitions %'
                        AND prosrc NOT LIKE '% sync_writer_fence %'
                       FROM triggers WHERE tgname = 'sync_commits_writer_guard'), false),
           'sync_commits_writer_guard(): a fence body reading unqualified names follows the caller''s search_path'

    UNION ALL
    SELECT 5, 'fence table owned by a non-sync role',
           coalesce((SELECT pg_get_userbyid(relowner) NOT IN ('sync_reader', 'sync_writer', 'sync_backfill', 'sync_admin')
                       FROM triggers WHERE tgname = 'sync_commits_writer_fence'), false),
           'owner ' || coalesce((SELECT pg_get_userbyid(relowner) FROM triggers WHERE tgname = 'sync_commits_writer_fence'), 'unknown')
    UNION ALL
    SELECT 6, 'privileged functions are SECURITY DEFINER with a pinned search_path',
           count(*) > 0 AND bool_and(prosecdef AND pinned),
           count(*) || ' SECURITY DEFINER now or in the record; not hardened: '
             || coalesce(string_agg(proname, ', ') FILTER (WHERE NOT prosecdef OR NOT pinned), 'none')
      FROM privileged
    UNION ALL
    SELECT 7, 'PUBLIC cannot execute privileged functions',
           NOT coalesce(bool_or(has_function_privilege('public', oid, 'EXECUTE')), false),
           'executable by PUBLIC: ' || coalesce(string_agg(proname, ', ') FILTER (WHERE has_function_privilege('public', oid, 'EXECUTE')), 'none')
      FROM privileged
    UNION ALL
    SELECT 8, 'functions pin their search_path (but the inlined ones and the row triggers)',
           coalesce(bool_and(pinned), true),
           'not pinned: ' || coalesce(string_agg(proname, ', '), 'none')
      FROM functions WHERE NOT pinned
       AND proname NOT IN ('sync_serve_gate', 'sync_xid_is_current', 'sync_changes_follow_commit', 'sync_commits_writer_guard')
    UNION ALL
    SELECT 9, 'sync roles cannot write the fence, the checkpoints, the marker, the horizon or the epoch',
           NOT EXISTS (SELECT 1 FROM writers),
           'roles with write access: ' || coalesce((SELECT string_agg(rolname, ', ') FROM writers), 'none')
    UNION ALL
    SELECT 10, 'PUBLIC cannot create objects in the sync schema or public',
           NOT EXISTS (SELECT 1 FROM creatable),
           'CREATE granted to PUBLIC on: ' || coalesce((SELECT string_agg(nspname, ', ') FROM creatable), 'none')
  ), checks(ord, check_name, quiet) AS (
    VALUES
      (4, 'fence function syncular_writer_fence', 'gosync''s body (it checks nothing: the fence and the head rule are sync_commits_writer_guard''s)'),
      (11, 'function definitions match the record', 'every recorded function has its recorded definition'),
      (12, 'relations match the record', 'every view query and table row-level security as recorded'),
      (13, 'every recorded object exists', 'none missing'),
      (14, 'every gosync object is recorded', 'none unrecorded'),
      (15, 'every SECURITY DEFINER function is recorded as such', 'none unrecorded'),
      (16, 'owners match the record', 'every owner as recorded'),
      (17, 'one role owns every gosync object', 'owner role ' || coalesce((SELECT rolname FROM owner_role), 'unknown')),
      (18, 'grants match the record', 'every grant as recorded'),
      (19, 'triggers on the sync tables match the record', 'every recorded trigger present, unchanged and enabled'),
      (20, 'sync roles are members of no higher role', 'only sync_writer, sync_backfill and sync_admin in sync_reader'),
      (21, 'no member of a sync role is a superuser or can act as the owner role', 'none'),
      (22, 'members of the owner role match the record', 'none added'),
      (23, 'the sync schema and public belong to the owner role', 'both owned by the owner role or a superuser'),
      (24, 'sync roles cannot create objects in the sync schema or public', 'none can'),
      (25, 'no prepared transaction holds a sync table or an advisory lock', 'none'),
      (26, 'max_prepared_transactions is 0', 'max_prepared_transactions = 0'),
      (27, 'who can bypass the barrier', ''),
      (28, 'every checkpoint''s partition is fenced at its version', 'every fence at or above its checkpoints'' versions'),
      (29, 'no default privileges grant to the sync roles or PUBLIC', 'none')
  ), findings(check_name, object, detail, severity) AS (
    -- Whose body upstream's fence function has. Not a rule: gosync's rules
    -- are sync_commits_writer_guard's; another body also fails the
    -- definitions check below.
    SELECT 'fence function syncular_writer_fence', 'syncular_writer_fence()',
           CASE fb.whose
             WHEN 'upstream''s body' THEN 'upstream''s body: an upstream 0.23 server re-created it at boot; it checks the fence a second time; '
                                         'gosync''s rules hold in sync_commits_writer_guard; gosync migrate up restores gosync''s body'
             ELSE 'another body, neither gosync''s nor upstream''s (see function definitions match the record); gosync migrate up restores gosync''s body' END,
           CASE fb.whose WHEN 'upstream''s body' THEN 'info' ELSE 'warn' END
      FROM fence_body fb WHERE fb.whose <> 'gosync''s body'
    UNION ALL
    SELECT 'function definitions match the record', c.object,
           CASE WHEN c.object = 'syncular_writer_fence()' AND (SELECT whose FROM fence_body) = 'upstream''s body'
                THEN format('upstream''s body (an upstream 0.23 boot re-created it): sha256 %s, recorded (gosync''s) %s; '
                            'gosync''s fence and head rule are sync_commits_writer_guard, unchanged',
                            left(c.definition, 16), left(r.definition, 16))
                ELSE format('its definition (body, SECURITY DEFINER, SET) is not the one recorded: sha256 %s, recorded %s',
                            left(c.definition, 16), left(r.definition, 16)) END,
           CASE WHEN c.object = 'syncular_writer_fence()' AND (SELECT whose FROM fence_body) = 'upstream''s body'
                THEN 'info' ELSE 'fail' END
      FROM cur c JOIN rec r ON r.kind = c.kind AND r.object = c.object
     WHERE c.kind = 'function' AND c.definition IS DISTINCT FROM r.definition
    UNION ALL
    SELECT 'relations match the record', c.object,
           'changed to: ' || coalesce(c.definition, 'nothing') || '; recorded: ' || coalesce(r.definition, 'nothing'), 'fail'
      FROM cur c JOIN rec r ON r.kind = c.kind AND r.object = c.object
     WHERE c.kind = 'relation' AND c.definition IS DISTINCT FROM r.definition
    UNION ALL
    SELECT 'every recorded object exists', r.object,
           format('the recorded %s is missing (dropped, renamed, re-created with other arguments, or no longer SECURITY DEFINER)', r.kind), 'fail'
      FROM rec r
     WHERE r.kind IN ('function', 'relation')
       AND NOT EXISTS (SELECT 1 FROM cur c WHERE c.kind = r.kind AND c.object = r.object)
    UNION ALL
    SELECT 'every gosync object is recorded', c.object,
           format('a %s owned by %s that no migration recorded', c.kind, c.owner), 'fail'
      FROM cur c
     WHERE (c.kind = 'relation' OR (c.kind = 'function' AND c.object ~ '^sync(ular)?_[a-z0-9_]*\('))
       AND NOT EXISTS (SELECT 1 FROM rec r WHERE r.kind = c.kind AND r.object = c.object)
    UNION ALL
    SELECT 'every SECURITY DEFINER function is recorded as such', c.object,
           format('SECURITY DEFINER (runs as %s) but %s', c.owner,
                  CASE WHEN r.object IS NULL THEN 'not recorded' ELSE 'recorded as SECURITY INVOKER' END), 'fail'
      FROM cur c LEFT JOIN rec r ON r.kind = c.kind AND r.object = c.object
     WHERE c.kind = 'function' AND c.state = 'security definer' AND r.state IS DISTINCT FROM 'security definer'
    UNION ALL
    SELECT 'owners match the record', c.object, format('%s owned by %s, recorded owner %s', c.kind, c.owner, r.owner), 'fail'
      FROM cur c JOIN rec r ON r.kind = c.kind AND r.object = c.object
     WHERE c.kind IN ('function', 'relation') AND c.owner IS DISTINCT FROM r.owner
    UNION ALL
    SELECT 'one role owns every gosync object', c.object,
           format('%s owned by %s, not by the owner role %s', c.kind, c.owner, coalesce((SELECT rolname FROM owner_role), 'unknown')), 'fail'
      FROM cur c
     WHERE c.kind IN ('function', 'relation') AND c.owner IS DISTINCT FROM (SELECT rolname FROM owner_role)
    UNION ALL
    SELECT 'grants match the record', c.object,
           concat_ws('; ',
             'granted since the record: ' || nullif(array_to_string(ARRAY(SELECT unnest(c.acl) EXCEPT SELECT unnest(r.acl) ORDER BY 1), ', '), ''),
             'revoked since the record: ' || nullif(array_to_string(ARRAY(SELECT unnest(r.acl) EXCEPT SELECT unnest(c.acl) ORDER BY 1), ', '), '')),
           'fail'
      FROM cur c JOIN rec r ON r.kind = c.kind AND r.object = c.object
     WHERE c.kind IN ('function', 'relation') AND c.acl IS DISTINCT FROM r.acl
    UNION ALL
    SELECT 'triggers on the sync tables match the record', coalesce(c.object, r.object),
           CASE WHEN c.object IS NULL THEN 'missing; recorded: ' || r.definition
                WHEN r.object IS NULL THEN 'not recorded: ' || c.definition
                WHEN c.definition IS DISTINCT FROM r.definition THEN 'changed to: ' || c.definition || '; recorded: ' || r.definition
                ELSE format('tgenabled = %s, recorded %s (O: fires normally, A: always; D: disabled, R: only under session_replication_role = replica)',
                            c.state, r.state) END,
           'fail'
      FROM (SELECT * FROM cur WHERE cur.kind = 'trigger') c
      FULL JOIN (SELECT * FROM rec WHERE rec.kind = 'trigger') r ON r.object = c.object
     WHERE c.object IS NULL OR r.object IS NULL OR c.definition IS DISTINCT FROM r.definition
        OR c.state IS DISTINCT FROM r.state OR c.state NOT IN ('O', 'A')
    UNION ALL
    SELECT 'sync roles are members of no higher role', pg_get_userbyid(m.member),
           format('%s is a member of %s: every login of %s gets the rights of %s',
                  pg_get_userbyid(m.member), pg_get_userbyid(m.roleid), pg_get_userbyid(m.member), pg_get_userbyid(m.roleid)), 'fail'
      FROM pg_auth_members m
     WHERE m.member IN (SELECT oid FROM roles)
       AND (m.roleid <> (SELECT oid FROM roles WHERE rolname = 'sync_reader')
            OR m.member = (SELECT oid FROM roles WHERE rolname = 'sync_reader'))
    UNION ALL
    SELECT 'no member of a sync role is a superuser or can act as the owner role', r.rolname,
           format('%s (a member of %s) %s: a service login must hold its sync role and nothing above it', r.rolname, sm.groups,
                  CASE WHEN r.rolsuper THEN 'is a superuser'
                       WHEN r.rolcreaterole AND current_setting('server_version_num')::int < 160000
                         THEN 'has CREATEROLE (it can grant itself any role)'
                       ELSE 'is a member of the owner role ' || (SELECT rolname FROM owner_role) END), 'fail'
      FROM sync_members sm JOIN pg_roles r ON r.oid = sm.member
     WHERE sm.member IS DISTINCT FROM (SELECT oid FROM owner_role)
       AND (r.rolsuper
            OR (r.rolcreaterole AND current_setting('server_version_num')::int < 160000)
            OR EXISTS (SELECT 1 FROM closure c WHERE c.member = sm.member AND c.roleid = (SELECT oid FROM owner_role)))
    UNION ALL
    SELECT 'members of the owner role match the record', pg_get_userbyid(c.member),
           format('%s became a member of the owner role %s after the record: it can bypass the barrier',
                  pg_get_userbyid(c.member), (SELECT rolname FROM owner_role)), 'fail'
      FROM closure c
     WHERE c.roleid = (SELECT oid FROM owner_role)
       AND NOT EXISTS (SELECT 1 FROM rec r WHERE r.kind = 'member' AND r.object = pg_get_userbyid(c.member))
    UNION ALL
    SELECT 'the sync schema and public belong to the owner role', so.nspname,
           format('schema %s is owned by %s%s, not by the owner role %s: its owner can drop and re-create any object in it',
                  so.nspname, pg_get_userbyid(so.owner),
                  CASE WHEN so.nspowner = 'pg_database_owner' THEN ' (the database owner, through pg_database_owner)' ELSE '' END,
                  coalesce((SELECT rolname FROM owner_role), 'unknown')), 'fail'
      FROM schema_owners so JOIN pg_roles r ON r.oid = so.owner
     WHERE so.owner IS DISTINCT FROM (SELECT oid FROM owner_role) AND NOT r.rolsuper
    UNION ALL
    SELECT 'sync roles cannot create objects in the sync schema or public', s.rolname || ' on ' || so.nspname,
           format('%s may CREATE in schema %s: its logins can plant objects next to gosync''s', s.rolname, so.nspname), 'fail'
      FROM roles s CROSS JOIN schema_owners so
     WHERE has_schema_privilege(s.oid, so.oid, 'CREATE')
    UNION ALL
    SELECT 'no prepared transaction holds a sync table or an advisory lock', 'prepared transaction ' || p.gid,
           format('prepared by %s at %s, holds %s: it keeps them across disconnects and restarts; '
                  'end it with COMMIT PREPARED %L or ROLLBACK PREPARED %L (as %s or a superuser)',
                  p.owner, p.prepared,
                  string_agg(l.mode || ' on ' || CASE l.locktype WHEN 'relation' THEN l.relation::regclass::text
                                                  ELSE format('advisory lock (%s, %s)', l.classid, l.objid) END,
                             ', ' ORDER BY l.locktype, l.relation, l.classid, l.objid),
                  p.gid, p.gid, p.owner), 'fail'
      FROM pg_prepared_xacts p
      -- A prepared transaction's locks have no pid; its xid lock names its
      -- virtual transaction.
      JOIN pg_locks x ON x.locktype = 'transactionid' AND x.transactionid = p.transaction AND x.pid IS NULL
      JOIN pg_locks l ON l.virtualtransaction = x.virtualtransaction AND l.pid IS NULL
     WHERE p.database = current_database()
       AND ((l.locktype = 'relation'
             AND l.relation IN (SELECT c.oid FROM pg_class c
                                 WHERE c.relnamespace = (SELECT oid FROM schema) AND c.relname LIKE 'sync\_%'))
            OR (l.locktype = 'advisory'
                AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())))
     GROUP BY p.gid, p.owner, p.prepared
    UNION ALL
    SELECT 'max_prepared_transactions is 0', NULL,
           format('max_prepared_transactions = %s: any login can PREPARE a transaction that keeps its locks '
                  '(a partition row, the migration lock) until someone ends it; set it to 0 unless something '
                  'here needs two-phase commit, and watch the row above', current_setting('max_prepared_transactions')),
           'warn'
     WHERE current_setting('max_prepared_transactions')::int > 0
    UNION ALL
    -- Data, not catalog: a fence lowered under a declared projection (only
    -- the owner can write the fence; nothing in gosync lowers one) lets old
    -- writers append what the projection misses. One pass over the
    -- checkpoints, a primary-key probe each; at most 100 rows named.
    SELECT 'every checkpoint''s partition is fenced at its version', c.partition || ' / ' || c.name,
           format('checkpoint %L of partition %L is at schema version %s, but the partition''s fence is %s',
                  c.name, c.partition, c.schema_version, coalesce(f.required_writer_version::text, 'absent')), 'fail'
      FROM (SELECT k.partition, k.name, k.schema_version FROM sync_backfill_checkpoints k
             WHERE NOT EXISTS (SELECT 1 FROM sync_writer_fence w
                                WHERE w.partition = k.partition AND w.required_writer_version >= k.schema_version)
             ORDER BY k.partition, k.name LIMIT 100) c
      LEFT JOIN sync_writer_fence f ON f.partition = c.partition
    UNION ALL
    -- A default privilege grants on every object a later migration creates,
    -- and the recorder would take those grants as intended.
    SELECT 'no default privileges grant to the sync roles or PUBLIC', c.object,
           format('ALTER DEFAULT PRIVILEGES of %s grants %s: every new object gets it (the record would too)',
                  c.owner, array_to_string(c.acl, ', ')), 'fail'
      FROM cur c
     WHERE c.kind = 'default acl'
       AND EXISTS (SELECT 1 FROM unnest(c.acl) g
                    WHERE split_part(g, ' ', 1) IN ('PUBLIC', 'sync_reader', 'sync_writer', 'sync_backfill', 'sync_admin'))
    UNION ALL
    SELECT 'who can bypass the barrier', NULL,
           concat_ws('; ',
             'superusers: ' || coalesce((SELECT string_agg(r.rolname, ', ' ORDER BY r.rolname) FROM pg_roles r WHERE r.rolsuper), 'none'),
             'the owner role: ' || coalesce((SELECT rolname FROM owner_role), 'unknown'),
             'schema owners: ' || (SELECT string_agg(so.nspname || ' ' || pg_get_userbyid(so.owner), ', ' ORDER BY so.nspname)
                                     FROM schema_owners so),
             'CREATEROLE (may grant itself any role): '
               || (SELECT string_agg(r.rolname, ', ' ORDER BY r.rolname) FROM bypass b JOIN pg_roles r ON r.oid = b.oid
                    WHERE b.why = 'CREATEROLE'),
             'logins that are members of them: '
               || coalesce((SELECT string_agg(DISTINCT r.rolname, ', ') FROM closure c JOIN pg_roles r ON r.oid = c.member
                             WHERE r.rolcanlogin AND c.roleid IN (SELECT oid FROM bypass)), 'none')),
           'info'
  )
  SELECT a.check_name, a.ok, a.detail, a.severity, a.object FROM (
    SELECT l.ord, l.check_name, l.ok, l.detail, CASE WHEN l.ok THEN 'ok' ELSE 'fail' END AS severity, NULL::text AS object
      FROM legacy l
    UNION ALL
    SELECT k.ord, k.check_name, coalesce(f.severity, 'ok') <> 'fail', coalesce(f.detail, k.quiet), coalesce(f.severity, 'ok'), f.object
      FROM checks k LEFT JOIN findings f USING (check_name)
  ) a
  ORDER BY a.ord, a.object NULLS FIRST
$$;
REVOKE ALL ON FUNCTION sync_security_audit() FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_security_audit() TO sync_reader;
COMMENT ON FUNCTION sync_security_audit() IS 'The security posture for a DBA: one row per check (one per offending object when it fails). SELECT * FROM sync_security_audit() WHERE NOT ok; is empty when healthy.';
-- Example:
--   SELECT * FROM sync_security_audit() WHERE NOT ok;  -- no rows when healthy
