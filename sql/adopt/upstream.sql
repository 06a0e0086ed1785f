-- Adopt a database that an upstream @syncular/server (0.15 - 0.23) created:
-- bring it to the state gosync's migration 00001 leaves, keeping every row,
-- and record 00001 as applied, so `goose up` continues with 00002.
-- Migrations are immutable, and 00001 creates its tables plainly (it fails
-- on tables that exist): this script is the adoption step in front of it.
-- `gosync migrate up` and gosync.Migrate run it themselves (in one
-- transaction, before goose, only when the version table records nothing
-- and sync_partitions exists); with plain goose run it first:
--
--   psql "$DATABASE_URL" -v ON_ERROR_STOP=1 --single-transaction -f sql/adopt/upstream.sql
--   goose -table gosync_db_version -dir sql/migrations postgres "$DATABASE_URL" up
--
-- It first checks every existing sync table's columns (type, nullability)
-- and primary key and refuses, naming each table and difference, before it
-- changes anything; then it creates only what is missing (IF NOT EXISTS) and
-- adds sync_commits.writer_version, the one column older upstream versions
-- lack (its last column, so the result equals a fresh table). An upstream
-- 0.23 database has the fence trigger already: it is dropped here so 00002
-- creates it (with gosync's function body) as on any database.
--
-- Ownership: the upstream login created the tables (and 0.23's fence
-- function), and as their owner it could lower fences, rewrite changes or
-- replace the fence body. Every table and that function is transferred to
-- the owner role, the role running this script (current_user: log in as it,
-- or SET ROLE to it, e.g. PGOPTIONS='-c role=gosync_owner'). The script
-- refuses, before changing anything, when that role cannot take them (it is
-- neither a superuser nor a member of their owner), naming what to run. The
-- upstream server must then be a member of the owner role: its start-up runs
-- DDL on these objects (CREATE OR REPLACE FUNCTION syncular_writer_fence,
-- DROP/CREATE TRIGGER, ALTER TABLE ... ADD COLUMN IF NOT EXISTS).
--
-- Down note: 00001's Down drops the sync tables. On an adopted database,
-- never migrate below version 1 (`gosync migrate down` refuses to).

DO $$
DECLARE
  problems text;
BEGIN
  -- gosync's own functions are here but its history is not: its migrations
  -- ran with another version table. Running them again would half-succeed.
  IF EXISTS (SELECT 1 FROM pg_proc
              WHERE proname = 'sync_claim_checkpoint' AND pronamespace = current_schema()::regnamespace) THEN
    RAISE EXCEPTION 'gosync: its migrations already ran on this database, recorded in another version table'
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'An earlier gosync build recorded them in goose_db_version: run `gosync migrate up` once, '
                   'which copies that history into gosync_db_version.';
  END IF;
  -- What gosync needs of each table: columns as "name type[ not null]" (the
  -- spelling of format_type) and the primary key's columns in order.
  WITH wanted(tbl, cols, pk) AS (VALUES
    ('sync_partitions', 'partition text not null, max_commit_seq bigint not null, horizon_seq bigint not null',
     'partition'),
    ('sync_partition_registry', 'partition text not null, log_epoch text not null, epoch_required boolean not null, '
     'last_authenticated_at_ms bigint not null', 'partition'),
    ('sync_row_scopes', 'partition text not null, tbl text not null, var text not null, value text not null, '
     'row_id text not null', 'partition, tbl, var, value, row_id'),
    ('sync_commits', 'partition text not null, commit_seq bigint not null, client_id text not null, '
     'client_commit_id text not null, actor_id text not null, created_at_ms bigint not null, writer_version bigint',
     'partition, commit_seq'),
    ('sync_changes', 'partition text not null, commit_seq bigint not null, idx integer not null, tbl text not null, '
     'row_id text not null, op smallint not null, row_version bigint, scopes jsonb not null, payload bytea',
     'partition, commit_seq, idx'),
    ('sync_change_scopes', 'partition text not null, tbl text not null, var text not null, value text not null, '
     'commit_seq bigint not null', 'partition, tbl, var, value, commit_seq'),
    ('sync_push_results', 'partition text not null, client_id text not null, client_commit_id text not null, '
     'result jsonb not null', 'partition, client_id, client_commit_id'),
    ('sync_reactions', 'partition text not null, idempotency_key text not null, type text not null, '
     'version integer not null, payload jsonb not null, source_client_id text not null, '
     'source_client_commit_id text not null, source_commit_seq bigint not null, created_at_ms bigint not null, '
     'available_at_ms bigint not null, status text not null, attempts integer not null, '
     'max_attempts integer not null, lease_owner text, lease_expires_at_ms bigint, completed_at_ms bigint, '
     'last_failure jsonb', 'partition, idempotency_key'),
    ('sync_clients', 'partition text not null, client_id text not null, actor_id text not null, '
     'wire_version integer not null, cursor bigint not null, subscriptions jsonb not null, '
     'updated_at_ms bigint not null', 'partition, client_id'),
    ('sync_blob_refs', 'partition text not null, tbl text not null, row_id text not null, blob_id text not null',
     'partition, tbl, row_id, blob_id'),
    ('sync_tombstones', 'partition text not null, tbl text not null, row_id text not null, '
     'commit_seq bigint not null', 'partition, tbl, row_id'),
    ('sync_schema_meta', 'id integer not null, schema_version bigint not null, layouts text not null', 'id'),
    ('sync_backfill_checkpoints', 'partition text not null, name text not null, schema_version integer not null, '
     'state text not null, watermark bigint not null, owner_epoch bigint not null, observed_rows bigint not null, '
     'updated_at_ms bigint not null', 'partition, name'),
    ('sync_writer_fence', 'partition text not null, required_writer_version integer not null', 'partition')
  ), existing AS (
    SELECT w.tbl, w.cols, w.pk, c.oid, c.relkind
      FROM wanted w
      JOIN pg_class c ON c.relname = w.tbl AND c.relnamespace = current_schema()::regnamespace
  ), wanted_col AS (
    SELECT e.tbl, e.oid, d.n, split_part(d.def, ' ', 1) AS col, substr(d.def, strpos(d.def, ' ') + 1) AS shape
      FROM existing e, regexp_split_to_table(e.cols, ',\s*') WITH ORDINALITY AS d(def, n)
     WHERE e.relkind IN ('r', 'p')
  ), actual_col AS (
    SELECT a.attrelid AS oid, a.attname::text AS col, a.attnotnull AND NOT a.atthasdef AS required,
           format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END AS shape
      FROM pg_attribute a
     WHERE a.attrelid IN (SELECT oid FROM existing) AND a.attnum > 0 AND NOT a.attisdropped
  ), actual_pk AS (
    SELECT e.oid, (SELECT string_agg(a.attname, ', ' ORDER BY k.n)
                     FROM pg_index i
                    CROSS JOIN unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
                     JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
                    WHERE i.indrelid = e.oid AND i.indisprimary) AS pk
      FROM existing e
  ), problem(tbl, n, msg) AS (
    SELECT tbl, 0, format('%s is not a table (relkind %s)', tbl, relkind)
      FROM existing WHERE relkind NOT IN ('r', 'p')
    UNION ALL
    -- writer_version is the one column an older upstream table may lack: it
    -- is added below.
    SELECT w.tbl, w.n, CASE WHEN a.col IS NULL THEN format('%s: column %s is missing (gosync needs %s %s)', w.tbl, w.col, w.col, w.shape)
                            ELSE format('%s: column %s is %s, gosync needs %s', w.tbl, w.col, a.shape, w.shape) END
      FROM wanted_col w
      LEFT JOIN actual_col a ON a.oid = w.oid AND a.col = w.col
     WHERE (a.col IS NULL AND (w.tbl, w.col) <> ('sync_commits', 'writer_version')) OR a.shape <> w.shape
    UNION ALL
    SELECT e.tbl, 1000, format('%s: column %s is not null without a default, and gosync never writes it', e.tbl, a.col)
      FROM existing e
      JOIN actual_col a ON a.oid = e.oid
     WHERE a.required AND NOT EXISTS (SELECT 1 FROM wanted_col w WHERE w.oid = e.oid AND w.col = a.col)
    UNION ALL
    SELECT e.tbl, 2000, CASE WHEN p.pk IS NULL THEN format('%s: has no primary key, gosync needs (%s)', e.tbl, e.pk)
                             ELSE format('%s: primary key is (%s), gosync needs (%s)', e.tbl, p.pk, e.pk) END
      FROM existing e
      JOIN actual_pk p ON p.oid = e.oid
     WHERE e.relkind IN ('r', 'p') AND p.pk IS DISTINCT FROM e.pk
  )
  SELECT string_agg(msg, '; ' ORDER BY tbl, n) INTO problems FROM problem;
  IF problems IS NOT NULL THEN
    RAISE EXCEPTION 'gosync: cannot adopt the existing sync tables: %', problems
      USING ERRCODE = 'invalid_table_definition',
            HINT = 'Nothing was changed. Give the tables named the shape of sql/migrations/00001_sync_log.sql.';
  END IF;
END;
$$;

-- Who owns what the adoption takes over; refuse before any change when the
-- owner role cannot take it.
DO $$
DECLARE
  stuck text;
  fixes text;
  owners text;
BEGIN
  WITH upstream(kind, obj, owner) AS (
    SELECT 'TABLE', format('%I', c.relname), c.relowner
      FROM pg_class c
     WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
       AND c.relname IN ('sync_partitions', 'sync_partition_registry', 'sync_row_scopes', 'sync_commits',
                         'sync_changes', 'sync_change_scopes', 'sync_push_results', 'sync_reactions',
                         'sync_clients', 'sync_blob_refs', 'sync_tombstones', 'sync_schema_meta',
                         'sync_backfill_checkpoints', 'sync_writer_fence')
    UNION ALL
    SELECT 'FUNCTION', p.oid::regprocedure::text, p.proowner
      FROM pg_proc p
     WHERE p.pronamespace = current_schema()::regnamespace AND p.proname = 'syncular_writer_fence'
  )
  SELECT string_agg(format('%s (owner %s)', obj, pg_get_userbyid(owner)), ', ' ORDER BY obj),
         string_agg(format('ALTER %s %s OWNER TO %I;', kind, obj, current_user), ' ' ORDER BY obj),
         string_agg(DISTINCT format('GRANT %I TO %I;', pg_get_userbyid(owner), current_user), ' ')
    INTO stuck, fixes, owners
    FROM upstream
   WHERE pg_get_userbyid(owner) <> current_user AND NOT pg_has_role(current_user, owner, 'USAGE');
  IF stuck IS NOT NULL THEN
    RAISE EXCEPTION 'gosync: cannot take ownership of the upstream objects: %; the owner role % is not a member of their owner', stuck, current_user
      USING ERRCODE = 'insufficient_privilege',
            HINT = 'Nothing was changed. As a superuser run: ' || fixes || ' (or ' || owners
                   || ' and migrate again), then make the upstream server''s login a member of ' || quote_ident(current_user) || '.';
  END IF;
END;
$$;

CREATE TABLE IF NOT EXISTS sync_partitions(
  partition TEXT PRIMARY KEY,
  max_commit_seq BIGINT NOT NULL DEFAULT 0,
  horizon_seq BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE IF NOT EXISTS sync_partition_registry(
  partition TEXT PRIMARY KEY,
  log_epoch TEXT NOT NULL,
  epoch_required BOOLEAN NOT NULL DEFAULT FALSE,
  last_authenticated_at_ms BIGINT NOT NULL
);

CREATE TABLE IF NOT EXISTS sync_row_scopes(
  partition TEXT NOT NULL, tbl TEXT NOT NULL,
  var TEXT NOT NULL, value TEXT NOT NULL, row_id TEXT NOT NULL,
  PRIMARY KEY(partition, tbl, var, value, row_id)
);
-- Row writes replace a row's scope entries by (partition, tbl, row_id);
-- row_id is the last primary-key column, so without this index every write
-- would scan the table's whole scope range.
CREATE INDEX IF NOT EXISTS sync_row_scopes_by_row
  ON sync_row_scopes(partition, tbl, row_id);

CREATE TABLE IF NOT EXISTS sync_commits(
  partition TEXT NOT NULL, commit_seq BIGINT NOT NULL,
  client_id TEXT NOT NULL, client_commit_id TEXT NOT NULL,
  actor_id TEXT NOT NULL, created_at_ms BIGINT NOT NULL,
  writer_version BIGINT,
  PRIMARY KEY(partition, commit_seq)
);
-- Upstream before 0.23 has no writer_version; its table gets it here.
ALTER TABLE sync_commits ADD COLUMN IF NOT EXISTS writer_version BIGINT;
CREATE INDEX IF NOT EXISTS sync_commits_by_time
  ON sync_commits(partition, created_at_ms);

CREATE TABLE IF NOT EXISTS sync_changes(
  partition TEXT NOT NULL, commit_seq BIGINT NOT NULL, idx INTEGER NOT NULL,
  tbl TEXT NOT NULL, row_id TEXT NOT NULL, op SMALLINT NOT NULL,
  row_version BIGINT, scopes JSONB NOT NULL, payload BYTEA,
  PRIMARY KEY(partition, commit_seq, idx)
);
CREATE INDEX IF NOT EXISTS sync_changes_by_table
  ON sync_changes(partition, commit_seq, tbl, idx);

CREATE TABLE IF NOT EXISTS sync_change_scopes(
  partition TEXT NOT NULL, tbl TEXT NOT NULL,
  var TEXT NOT NULL, value TEXT NOT NULL, commit_seq BIGINT NOT NULL,
  PRIMARY KEY(partition, tbl, var, value, commit_seq)
);

CREATE TABLE IF NOT EXISTS sync_push_results(
  partition TEXT NOT NULL, client_id TEXT NOT NULL,
  client_commit_id TEXT NOT NULL, result JSONB NOT NULL,
  PRIMARY KEY(partition, client_id, client_commit_id)
);

CREATE TABLE IF NOT EXISTS sync_reactions(
  partition TEXT NOT NULL, idempotency_key TEXT NOT NULL,
  type TEXT NOT NULL, version INTEGER NOT NULL, payload JSONB NOT NULL,
  source_client_id TEXT NOT NULL, source_client_commit_id TEXT NOT NULL,
  source_commit_seq BIGINT NOT NULL, created_at_ms BIGINT NOT NULL,
  available_at_ms BIGINT NOT NULL, status TEXT NOT NULL,
  attempts INTEGER NOT NULL, max_attempts INTEGER NOT NULL,
  lease_owner TEXT, lease_expires_at_ms BIGINT, completed_at_ms BIGINT,
  last_failure JSONB,
  PRIMARY KEY(partition, idempotency_key),
  CHECK(status IN ('pending', 'leased', 'completed', 'dead-letter'))
);
CREATE INDEX IF NOT EXISTS sync_reactions_due
  ON sync_reactions(partition, status, available_at_ms, created_at_ms, idempotency_key);
CREATE INDEX IF NOT EXISTS sync_reactions_lease
  ON sync_reactions(partition, status, lease_expires_at_ms);
CREATE INDEX IF NOT EXISTS sync_reactions_completed
  ON sync_reactions(partition, status, completed_at_ms, idempotency_key);
CREATE INDEX IF NOT EXISTS sync_reactions_dead_letter
  ON sync_reactions(partition, status, available_at_ms, idempotency_key);

CREATE TABLE IF NOT EXISTS sync_clients(
  partition TEXT NOT NULL, client_id TEXT NOT NULL, actor_id TEXT NOT NULL,
  wire_version INTEGER NOT NULL DEFAULT 1,
  cursor BIGINT NOT NULL, subscriptions JSONB NOT NULL,
  updated_at_ms BIGINT NOT NULL,
  PRIMARY KEY(partition, client_id)
);

CREATE TABLE IF NOT EXISTS sync_blob_refs(
  partition TEXT NOT NULL, tbl TEXT NOT NULL, row_id TEXT NOT NULL,
  blob_id TEXT NOT NULL,
  PRIMARY KEY(partition, tbl, row_id, blob_id)
);
CREATE INDEX IF NOT EXISTS sync_blob_refs_by_blob
  ON sync_blob_refs(partition, blob_id);

CREATE TABLE IF NOT EXISTS sync_tombstones(
  partition TEXT NOT NULL, tbl TEXT NOT NULL, row_id TEXT NOT NULL,
  commit_seq BIGINT NOT NULL,
  PRIMARY KEY(partition, tbl, row_id)
);

CREATE TABLE IF NOT EXISTS sync_schema_meta(
  id INTEGER PRIMARY KEY CHECK (id = 1),
  schema_version BIGINT NOT NULL,
  layouts TEXT NOT NULL DEFAULT '{}'
);

-- Migration barrier (RFC 0007): one row per (partition, projection) being
-- backfilled; owner_epoch fences out stale workers, watermark is the commit
-- seq the projection is known to cover.
CREATE TABLE IF NOT EXISTS sync_backfill_checkpoints(
  partition TEXT NOT NULL, name TEXT NOT NULL,
  schema_version INTEGER NOT NULL,
  state TEXT NOT NULL CHECK(state IN ('declared','backfilling','activated')),
  watermark BIGINT NOT NULL DEFAULT 0,
  owner_epoch BIGINT NOT NULL DEFAULT 0,
  observed_rows BIGINT NOT NULL DEFAULT 0,
  updated_at_ms BIGINT NOT NULL,
  PRIMARY KEY(partition, name)
);

-- The lowest writer_version a commit of the partition may carry; enforced by
-- the sync_commits_writer_fence trigger. No row: no barrier.
CREATE TABLE IF NOT EXISTS sync_writer_fence(
  partition TEXT PRIMARY KEY,
  required_writer_version INTEGER NOT NULL
);

-- An upstream 0.23 trigger (00002 creates gosync's).
DROP TRIGGER IF EXISTS sync_commits_writer_fence ON sync_commits;

-- The owner role takes every table and the upstream fence function.
DO $$
DECLARE
  o record;
BEGIN
  FOR o IN
    SELECT 'TABLE' AS kind, format('%I', c.relname) AS obj
      FROM pg_class c
     WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
       AND pg_get_userbyid(c.relowner) <> current_user
       AND c.relname IN ('sync_partitions', 'sync_partition_registry', 'sync_row_scopes', 'sync_commits',
                         'sync_changes', 'sync_change_scopes', 'sync_push_results', 'sync_reactions',
                         'sync_clients', 'sync_blob_refs', 'sync_tombstones', 'sync_schema_meta',
                         'sync_backfill_checkpoints', 'sync_writer_fence')
    UNION ALL
    SELECT 'FUNCTION', p.oid::regprocedure::text
      FROM pg_proc p
     WHERE p.pronamespace = current_schema()::regnamespace AND p.proname = 'syncular_writer_fence'
       AND pg_get_userbyid(p.proowner) <> current_user
  LOOP
    EXECUTE format('ALTER %s %s OWNER TO CURRENT_USER', o.kind, o.obj);
  END LOOP;
END;
$$;

-- Record 00001 as applied, in goose's own table format.
CREATE TABLE IF NOT EXISTS gosync_db_version (
  id integer PRIMARY KEY GENERATED BY DEFAULT AS IDENTITY,
  version_id bigint NOT NULL,
  is_applied boolean NOT NULL,
  tstamp timestamp NOT NULL DEFAULT now()
);
INSERT INTO gosync_db_version (version_id, is_applied)
SELECT v, true FROM (VALUES (0), (1)) AS versions(v)
 WHERE NOT EXISTS (SELECT 1 FROM gosync_db_version WHERE version_id = v);
