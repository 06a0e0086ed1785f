-- What the audit compares with sync_installed_catalog: the security-relevant
-- state of every object the barrier relies on, one row per object, in the
-- shape sync_record_installed_catalog() stores. Catalog reads only (nothing
-- proportional to the log or the partitions).
--   function  every function of the sync schema named sync_*/syncular_* or
--             SECURITY DEFINER, and every SECURITY DEFINER function elsewhere
--             owned by the owner role or a sync role; object = name(identity
--             args), schema-qualified outside the sync schema; definition =
--             sha256 of pg_get_functiondef (body, SECURITY DEFINER, SET, ...)
--   relation  every sync_* table, view, sequence of the sync schema, and the
--             version table gosync_db_version; definition = sha256 of a
--             view's query; for a table its row-level security and policies,
--             and digests of its columns (type, NOT NULL, default: a default
--             writer_version would let an old writer pass the fence), its
--             constraints and indexes (a dropped primary key allows two
--             commits at one seq), its rules (DO INSTEAD NOTHING swallows
--             changes), its inheritance children (the fence reads them) and
--             parents (a write through a parent checks only the parent's
--             grants), its persistence (an UNLOGGED fence is empty after a
--             crash) and options; a sequence's settings; and every view or
--             table elsewhere, owned by the owner role, a member of it or a
--             superuser, with a rule that reads or writes a sync table (a
--             view's or rule's statements run with its owner's rights)
--   trigger   every trigger on those relations; definition = pg_get_triggerdef
--             (events, function, WHEN), state = tgenabled
--   member    every role that is (transitively) a member of the owner role
--   default acl  every default privilege (ALTER DEFAULT PRIVILEGES) in the
--             database: it grants on objects later migrations create
-- acl lists the grants to anyone but the owner, "grantee PRIVILEGE[ (column)]",
-- sorted (NULL ACLs as their defaults: a function's means PUBLIC EXECUTE).
-- The owner role is the owner of sync_record_installed_catalog(): the role
-- that ran the migrations (an adopted upstream login that still owns the
-- tables is then what the audit names, not the other way round).
CREATE OR REPLACE FUNCTION sync_catalog_snapshot()
RETURNS TABLE (kind text, object text, owner text, acl text[], definition text, state text)
LANGUAGE sql
STABLE
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
  WITH RECURSIVE schema AS (
    SELECT c.relnamespace AS oid,
           (SELECT p.proowner FROM pg_proc p WHERE p.oid = to_regprocedure('sync_record_installed_catalog()')) AS owner
      FROM pg_class c WHERE c.oid = 'sync_commits'::regclass
  ), members(oid) AS (
    SELECT m.member FROM pg_auth_members m WHERE m.roleid = (SELECT owner FROM schema)
    UNION
    SELECT m.member FROM pg_auth_members m JOIN members u ON m.roleid = u.oid
  ), fns AS (
    SELECT p.oid, p.pronamespace, p.proname, p.proowner, p.proacl, p.prosecdef, n.nspname
      FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
     WHERE p.prokind <> 'a'
       AND ((p.pronamespace = (SELECT oid FROM schema) AND (p.proname ~ '^sync(ular)?_' OR p.prosecdef))
            OR (p.prosecdef AND n.nspname NOT IN ('pg_catalog', 'information_schema')
                AND (p.proowner = (SELECT owner FROM schema)
                     OR pg_get_userbyid(p.proowner) IN ('sync_reader', 'sync_writer', 'sync_backfill', 'sync_admin'))))
       -- A session's own temp function runs as its creator: no one gains a
       -- privilege through it, and any login could make the audit red.
       AND n.nspname !~ '^pg_(toast_)?temp_'
       AND NOT EXISTS (SELECT 1 FROM pg_depend d
                        WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
  ), sync_rels AS (
    SELECT c.oid FROM pg_class c
     WHERE c.relnamespace = (SELECT oid FROM schema) AND (c.relname LIKE 'sync\_%' OR c.relname = 'gosync_db_version')
       AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
  ), rels AS (
    SELECT c.oid,
           CASE WHEN c.relnamespace = (SELECT oid FROM schema) THEN c.relname::text
                ELSE quote_ident(n.nspname) || '.' || quote_ident(c.relname) END AS relname,
           c.relkind, c.relowner, c.relacl, c.relrowsecurity, c.relforcerowsecurity, c.relpersistence, c.reloptions
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.oid IN (SELECT oid FROM sync_rels)
        OR (c.oid IN (SELECT w.ev_class FROM pg_rewrite w JOIN pg_depend d
                        ON d.classid = 'pg_rewrite'::regclass AND d.objid = w.oid
                       WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid IN (SELECT oid FROM sync_rels))
            AND c.oid NOT IN (SELECT oid FROM sync_rels)
            AND (c.relowner = (SELECT owner FROM schema) OR c.relowner IN (SELECT oid FROM members)
                 OR c.relowner IN (SELECT r.oid FROM pg_roles r WHERE r.rolsuper)))
  )
  SELECT 'function',
         CASE WHEN f.pronamespace = (SELECT oid FROM schema) THEN '' ELSE quote_ident(f.nspname) || '.' END
           || f.proname || '(' || pg_get_function_identity_arguments(f.oid) || ')',
         pg_get_userbyid(f.proowner),
         ARRAY(SELECT CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END || ' ' || a.privilege_type
                        || CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END
                 FROM aclexplode(coalesce(f.proacl, acldefault('f'::"char", f.proowner))) a
                WHERE a.grantee <> f.proowner ORDER BY 1),
         encode(sha256(convert_to(pg_get_functiondef(f.oid), 'UTF8')), 'hex'),
         CASE WHEN f.prosecdef THEN 'security definer' ELSE 'security invoker' END
    FROM fns f
  UNION ALL
  SELECT 'relation', r.relname, pg_get_userbyid(r.relowner),
         ARRAY(SELECT g FROM (
                 SELECT CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END || ' ' || a.privilege_type
                          || CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END
                   FROM aclexplode(coalesce(r.relacl, acldefault(CASE r.relkind WHEN 'S' THEN 's' ELSE 'r' END::"char", r.relowner))) a
                  WHERE a.grantee <> r.relowner
                    -- The version table's readers are the migrator's to grant
                    -- (GrantVersionTable, after goose); its writers are not.
                    AND (r.relname <> 'gosync_db_version' OR a.privilege_type <> 'SELECT')
                 UNION ALL
                 SELECT CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END || ' ' || a.privilege_type
                          || ' (' || t.attname || ')' || CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END
                   FROM pg_attribute t CROSS JOIN LATERAL aclexplode(t.attacl) a
                  WHERE t.attrelid = r.oid AND t.attnum > 0 AND NOT t.attisdropped AND t.attacl IS NOT NULL
                    AND a.grantee <> r.relowner) grants(g)
                ORDER BY 1),
         CASE WHEN r.relkind IN ('v', 'm') THEN 'query ' || encode(sha256(convert_to(pg_get_viewdef(r.oid), 'UTF8')), 'hex')
                  || coalesce('; options ' || array_to_string(r.reloptions, ','), '')
              WHEN r.relkind IN ('r', 'p') THEN
                -- Row-level security applies to the fence trigger's reads
                -- (it runs as the inserting role): a policy could hide a fence.
                'row security ' || CASE WHEN r.relrowsecurity THEN 'on' ELSE 'off' END
                  || CASE WHEN r.relforcerowsecurity THEN ', forced' ELSE '' END
                  || coalesce('; policies ' || (
                       SELECT string_agg(p.polname || ' ' || left(encode(sha256(convert_to(concat_ws(' ', p.polcmd, p.polpermissive,
                                p.polroles::text, pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid)), 'UTF8')), 'hex'), 16),
                              ', ' ORDER BY p.polname)
                         FROM pg_policy p WHERE p.polrelid = r.oid), '')
                  || '; columns ' || left(encode(sha256(convert_to(coalesce((
                       SELECT string_agg(concat_ws(' ', t.attname, format_type(t.atttypid, t.atttypmod), t.attnotnull,
                                                   t.attcollation::regcollation::text, pg_get_expr(d.adbin, d.adrelid)), ', ' ORDER BY t.attnum)
                         FROM pg_attribute t LEFT JOIN pg_attrdef d ON d.adrelid = t.attrelid AND d.adnum = t.attnum
                        WHERE t.attrelid = r.oid AND t.attnum > 0 AND NOT t.attisdropped), ''), 'UTF8')), 'hex'), 16)
                  || '; constraints ' || left(encode(sha256(convert_to(coalesce((
                       SELECT string_agg(k.conname || ' ' || pg_get_constraintdef(k.oid), ', ' ORDER BY k.conname)
                         FROM pg_constraint k WHERE k.conrelid = r.oid), ''), 'UTF8')), 'hex'), 16)
                  || '; indexes ' || left(encode(sha256(convert_to(coalesce((
                       SELECT string_agg(pg_get_indexdef(i.indexrelid), ', ' ORDER BY i.indexrelid::regclass::text)
                         FROM pg_index i WHERE i.indrelid = r.oid), ''), 'UTF8')), 'hex'), 16)
                  || '; rules ' || coalesce((
                       SELECT string_agg(w.rulename || ' ' || left(encode(sha256(convert_to(pg_get_ruledef(w.oid), 'UTF8')), 'hex'), 16), ', ' ORDER BY w.rulename)
                         FROM pg_rewrite w WHERE w.ev_class = r.oid), 'none')
                  || '; children ' || coalesce((
                       SELECT string_agg(h.inhrelid::regclass::text, ', ' ORDER BY h.inhrelid::regclass::text)
                         FROM pg_inherits h WHERE h.inhparent = r.oid), 'none')
                  || '; parents ' || coalesce((
                       SELECT string_agg(h.inhparent::regclass::text, ', ' ORDER BY h.inhparent::regclass::text)
                         FROM pg_inherits h WHERE h.inhrelid = r.oid), 'none')
                  || CASE r.relpersistence WHEN 'u' THEN '; unlogged' WHEN 't' THEN '; temporary' ELSE '' END
                  || coalesce('; options ' || array_to_string(r.reloptions, ','), '')
              WHEN r.relkind = 'S' THEN
                (SELECT format('sequence %s %s..%s by %s%s', format_type(q.seqtypid, NULL), q.seqmin, q.seqmax, q.seqincrement,
                               CASE WHEN q.seqcycle THEN ' cycle' ELSE '' END)
                   FROM pg_sequence q WHERE q.seqrelid = r.oid) END,
         r.relkind::text
    FROM rels r
  UNION ALL
  SELECT 'trigger', t.tgname || ' on ' || r.relname, NULL, '{}', pg_get_triggerdef(t.oid), t.tgenabled::text
    FROM pg_trigger t JOIN rels r ON r.oid = t.tgrelid
   WHERE NOT t.tgisinternal
  UNION ALL
  SELECT 'member', r.rolname, pg_get_userbyid((SELECT owner FROM schema)), '{}', NULL,
         CASE WHEN r.rolcanlogin THEN 'login' ELSE 'nologin' END
    FROM members m JOIN pg_roles r ON r.oid = m.oid
  UNION ALL
  SELECT 'default acl',
         format('%s %s in %s', pg_get_userbyid(a.defaclrole),
                CASE a.defaclobjtype WHEN 'r' THEN 'tables' WHEN 'S' THEN 'sequences' WHEN 'f' THEN 'functions'
                                     WHEN 'T' THEN 'types' WHEN 'n' THEN 'schemas' ELSE a.defaclobjtype::text END,
                coalesce(a.defaclnamespace::regnamespace::text, 'every schema')),
         pg_get_userbyid(a.defaclrole),
         ARRAY(SELECT CASE x.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_get_userbyid(x.grantee) END || ' ' || x.privilege_type
                 FROM aclexplode(a.defaclacl) x WHERE x.grantee <> a.defaclrole ORDER BY 1),
         NULL, NULL
    FROM pg_default_acl a
$$;
REVOKE ALL ON FUNCTION sync_catalog_snapshot() FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_catalog_snapshot() TO sync_reader;
COMMENT ON FUNCTION sync_catalog_snapshot() IS 'internal: the security-relevant state of every gosync object (functions, relations, triggers, owner-role members) in the shape of sync_installed_catalog, for the audit.';
