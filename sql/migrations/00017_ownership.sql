-- Ownership: every object gosync relies on belongs to one owner role, the
-- role that runs the migrations (current_user: log in as it, or
-- `SET ROLE` to it, e.g. PGOPTIONS='-c role=gosync_owner' for the goose CLI;
-- `gosync migrate up --owner` and gosync.WithOwner do that SET ROLE).
--
-- The block below refuses, naming each object and its owner:
--   * an object under a gosync name (sync_* / syncular_* tables, views,
--     sequences, functions, and the version table) in this schema owned by
--     another role. CREATE OR REPLACE keeps a function's owner, so a
--     function planted under a gosync name before the migrations ran keeps
--     its creator, who could rewrite it later; a superuser's migration
--     would otherwise succeed silently on top of it.
--   * a schema whose owner (for pg_database_owner: the database's owner) is
--     neither the owner role nor a superuser: a schema's owner can drop any
--     function or table in it (DROP ... CASCADE drops the triggers too),
--     so it could switch the barrier off. Set
--     gosync.allow_foreign_schema_owner = on to accept that (a warning).
--
-- gosync.Migrate and `gosync migrate up` run this same block (read from
-- this file, gosync/migrate.go) before any migration, in the transaction
-- of the adoption step: nothing runs on a refused database. Through the
-- goose CLI it runs after 00001-00016, and fails the run loudly.

-- +goose Up
-- +goose StatementBegin
DO $ownership$
DECLARE
  version_table text := coalesce(nullif(current_setting('gosync.version_table', true), ''), 'gosync_db_version');
  me oid := (SELECT oid FROM pg_roles WHERE rolname = current_user);
  schema_owner oid;
  foreign_objects text;
  fixes text;
BEGIN
  SELECT CASE WHEN pg_get_userbyid(n.nspowner) = 'pg_database_owner' THEN d.datdba ELSE n.nspowner END
    INTO schema_owner
    FROM pg_namespace n, pg_database d
   WHERE n.oid = current_schema()::regnamespace AND d.datname = current_database();
  IF schema_owner <> me
     AND NOT (SELECT rolsuper FROM pg_roles WHERE oid = schema_owner) THEN
    IF coalesce(current_setting('gosync.allow_foreign_schema_owner', true), '') IN ('on', 'true') THEN
      RAISE WARNING 'gosync: schema % is owned by %, not by the owner role %: that role and its members can drop gosync''s functions and tables',
        current_schema(), pg_get_userbyid(schema_owner), current_user;
    ELSE
      RAISE EXCEPTION 'gosync: schema % is owned by %, not by the owner role % (nor a superuser): that role and its members can drop gosync''s functions and tables and so switch the barrier off',
          current_schema(), pg_get_userbyid(schema_owner), current_user
        USING ERRCODE = 'insufficient_privilege',
              HINT = format('Nothing was changed. If %s is the owner role, migrate as it (--owner %s, gosync.WithOwner, PGOPTIONS=''-c role=%s''). '
                            'Else, as a superuser or %s: ALTER SCHEMA %I OWNER TO %I; (or ALTER DATABASE %I OWNER TO %I when the schema belongs to pg_database_owner), '
                            'or accept it with gosync.allow_foreign_schema_owner = on (`--allow-foreign-schema-owner`).',
                            pg_get_userbyid(schema_owner), pg_get_userbyid(schema_owner), pg_get_userbyid(schema_owner),
                            pg_get_userbyid(schema_owner), current_schema(), current_user, current_database(), current_user);
    END IF;
  END IF;

  WITH named AS (
    SELECT CASE WHEN c.relkind IN ('r', 'p') THEN 'TABLE' WHEN c.relkind = 'S' THEN 'SEQUENCE'
                WHEN c.relkind = 'm' THEN 'MATERIALIZED VIEW' WHEN c.relkind = 'f' THEN 'FOREIGN TABLE'
                ELSE 'VIEW' END AS kind,
           format('%I', c.relname) AS obj, c.relowner AS owner
      FROM pg_class c
     WHERE c.relnamespace = current_schema()::regnamespace
       AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
       AND (c.relname LIKE 'sync\_%' OR c.relname LIKE 'syncular\_%'
            OR c.relname = version_table OR c.relname = version_table || '_id_seq')
    UNION ALL
    SELECT 'FUNCTION', p.oid::regprocedure::text, p.proowner
      FROM pg_proc p
     WHERE p.pronamespace = current_schema()::regnamespace
       AND (p.proname LIKE 'sync\_%' OR p.proname LIKE 'syncular\_%')
  )
  SELECT string_agg(format('%s %s (owner %s)', lower(kind), obj, pg_get_userbyid(owner)), ', ' ORDER BY kind, obj),
         string_agg(format('ALTER %s %s OWNER TO %I;', kind, obj, current_user), ' ' ORDER BY kind, obj)
    INTO foreign_objects, fixes
    FROM named
   WHERE owner <> me;
  IF foreign_objects IS NOT NULL THEN
    RAISE EXCEPTION 'gosync: objects under gosync names are owned by another role than the owner role %: %', current_user, foreign_objects
      USING ERRCODE = 'insufficient_privilege',
            HINT = 'Nothing was changed. Their owner can rewrite them, so gosync does not build on them. '
                   'If an earlier migrate up made them with another owner role, migrate as that role '
                   '(--owner, gosync.WithOwner, PGOPTIONS=''-c role=...''); else check what they are, '
                   'then drop them, or as a superuser: ' || fixes;
  END IF;
END;
$ownership$;
-- +goose StatementEnd

-- +goose Down
SELECT 1; -- the check creates nothing
