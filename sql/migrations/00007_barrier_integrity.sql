-- The barrier holds against every writer: isolation levels, the tables a
-- role is granted, lifecycle calls out of order, ill-formed arguments.
--
-- * Head-only appends: a commit only at the seq its own transaction allocated
--   (syncular_writer_fence), a change or change scope only under a commit of
--   its own transaction (sync_changes_follow_commit), sync_partitions'
--   sequence rules for every role (sync_partitions_guard).
-- * REPEATABLE READ / SERIALIZABLE: a fence raise writes the partition row
--   (sync_install_checkpoint), so a writer with an older snapshot fails its
--   allocation (40001) instead of appending under a fence it cannot see.
-- * Lifecycle: claim never re-stamps the version; advance and activate only
--   by the current owner of a backfilling row; the watermark never goes down
--   nor passes the head; activation exactly at the stored watermark; an
--   activated row is final.
-- * Arguments: marker versions up to 2^31-1 and layouts of the right shape;
--   row ids are keys; row versions are not negative.
-- * Grants: sync_writer gets column-level INSERT/UPDATE on sync_partitions
--   and sync_partition_registry (allocate a seq, register, stamp the last
--   authentication), no longer the horizon, the epoch or LOCK TABLE; PUBLIC
--   loses CREATE on the public schema.
-- * The fence trigger drops its per-row SET search_path: it reads its tables
--   by schema-qualified name (the schema is written in at migration time),
--   as the new change trigger does.
--
-- Function bodies are verbatim copies of sql/functions/*.sql as of this
-- migration (the two trigger functions with @extschema@ replaced by this
-- schema);
-- Down restores the bodies of 00003/00004/00006.

-- +goose Up

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_xid_is_current(x xid)
RETURNS boolean
LANGUAGE sql
VOLATILE
AS $$
  SELECT CASE
    WHEN $1 IS NULL OR $1::pg_catalog.text::bigint OPERATOR(pg_catalog.<) 3 THEN false
    WHEN ($1::pg_catalog.text::bigint
          OPERATOR(pg_catalog.-) (pg_catalog.pg_current_xact_id()::pg_catalog.text::bigint OPERATOR(pg_catalog.&) 4294967295)
          OPERATOR(pg_catalog.+) 4294967296) OPERATOR(pg_catalog.%) 4294967296
         OPERATOR(pg_catalog.>=) 2147483648 THEN false
    ELSE coalesce(pg_catalog.pg_xact_status((
           pg_catalog.pg_current_xact_id()::pg_catalog.text::bigint OPERATOR(pg_catalog.+)
           ($1::pg_catalog.text::bigint
            OPERATOR(pg_catalog.-) (pg_catalog.pg_current_xact_id()::pg_catalog.text::bigint OPERATOR(pg_catalog.&) 4294967295)
            OPERATOR(pg_catalog.+) 4294967296) OPERATOR(pg_catalog.%) 4294967296
         )::pg_catalog.text::pg_catalog.xid8) OPERATOR(pg_catalog.=) 'in progress', false)
  END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $migrate$
BEGIN
  EXECUTE replace($fn$CREATE OR REPLACE FUNCTION syncular_writer_fence()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
  required integer;
  head bigint;
  horizon bigint;
  allocated_here boolean;
BEGIN
  SELECT f.required_writer_version, p.max_commit_seq, p.horizon_seq,
         @extschema@.sync_xid_is_current(p.xmin)
    INTO required, head, horizon, allocated_here
    FROM (SELECT NEW.partition AS partition) k
    LEFT JOIN @extschema@.sync_partitions p ON p.partition OPERATOR(pg_catalog.=) k.partition
    LEFT JOIN @extschema@.sync_writer_fence f ON f.partition OPERATOR(pg_catalog.=) k.partition;
  IF required IS NOT NULL
     AND (NEW.writer_version IS NULL OR NEW.writer_version OPERATOR(pg_catalog.<) required) THEN
    RAISE EXCEPTION 'sync.storage.writer_fence_rejected'
      USING DETAIL = pg_catalog.format(
        'partition %L requires writer_version >= %s; the commit offered %s',
        NEW.partition, required, coalesce(NEW.writer_version::pg_catalog.text, 'NULL')),
      HINT = 'Upgrade the writer to the schema version the fence requires.';
  END IF;
  IF head IS NULL
     OR NEW.commit_seq OPERATOR(pg_catalog.<>) head
     OR NEW.commit_seq OPERATOR(pg_catalog.<=) horizon
     OR NOT allocated_here THEN
    RAISE EXCEPTION 'sync.storage.commit_not_at_head'
      USING DETAIL = pg_catalog.format(
        'partition %L: a commit takes the seq its own transaction allocated from sync_partitions.max_commit_seq (head %s, horizon %s, allocated here: %s); the commit offered %s',
        NEW.partition, coalesce(head::pg_catalog.text, 'none'),
        coalesce(horizon::pg_catalog.text, 'none'),
        coalesce(allocated_here, false), NEW.commit_seq),
      HINT = 'Allocate the seq in the same transaction (UPDATE sync_partitions SET max_commit_seq = max_commit_seq + 1 ... RETURNING max_commit_seq) or call sync_append_commit.';
  END IF;
  RETURN NEW;
END;
$$;$fn$, '@extschema@', quote_ident(current_schema()));
END;
$migrate$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $migrate$
BEGIN
  EXECUTE replace($fn$CREATE OR REPLACE FUNCTION sync_changes_follow_commit()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  IF NOT coalesce((SELECT @extschema@.sync_xid_is_current(c.xmin)
                     FROM @extschema@.sync_commits c
                    WHERE c.partition OPERATOR(pg_catalog.=) NEW.partition
                      AND c.commit_seq OPERATOR(pg_catalog.=) NEW.commit_seq), false) THEN
    RAISE EXCEPTION 'sync.storage.change_without_commit'
      USING DETAIL = pg_catalog.format('%s: partition %L has no commit %s appended by this transaction',
                                       TG_TABLE_NAME, NEW.partition, NEW.commit_seq),
            HINT = 'Insert changes in the transaction that appends their commit (sync_append_commit does both).';
  END IF;
  RETURN NULL;
END;
$$;$fn$, '@extschema@', quote_ident(current_schema()));
END;
$migrate$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_partitions_guard()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  RAISE EXCEPTION 'sync.storage.partition_seq_rejected'
    USING ERRCODE = 'check_violation',
          DETAIL = format('partition %L: max_commit_seq %s -> %s, horizon_seq %s -> %s (%s); allocations add 1, the horizon only rises through sync_prune_log',
                          NEW.partition,
                          CASE WHEN TG_OP = 'UPDATE' THEN OLD.max_commit_seq::text ELSE 'new' END, NEW.max_commit_seq,
                          CASE WHEN TG_OP = 'UPDATE' THEN OLD.horizon_seq::text ELSE 'new' END, NEW.horizon_seq,
                          TG_OP);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_claim_checkpoint(
  partition text, name text, schema_version integer, now_ms bigint DEFAULT NULL)
RETURNS SETOF sync_backfill_checkpoints
LANGUAGE plpgsql
ROWS 1
AS $$
#variable_conflict use_column
DECLARE
  claimed sync_backfill_checkpoints;
  declared_version integer;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('name', $2);
  PERFORM sync_assert_nonnegative('schema_version', $3, 1);
  UPDATE sync_backfill_checkpoints c
     SET owner_epoch = c.owner_epoch + 1,
         state = 'backfilling',
         updated_at_ms = coalesce($4, sync_now_ms())
   WHERE c.partition = $1 AND c.name = $2 AND c.state <> 'activated' AND c.schema_version = $3
  RETURNING c.* INTO claimed;
  IF NOT FOUND THEN
    SELECT c.schema_version INTO declared_version
      FROM sync_backfill_checkpoints c
     WHERE c.partition = $1 AND c.name = $2 AND c.state <> 'activated';
    IF FOUND THEN
      RAISE EXCEPTION 'sync.storage.checkpoint_not_declared'
        USING DETAIL = format('checkpoint %L in partition %L is declared at schema version %s, not %s',
                              $2, $1, declared_version, $3);
    END IF;
    RAISE EXCEPTION 'sync.storage.checkpoint_not_declared'
      USING DETAIL = format('no claimable checkpoint %L in partition %L (missing or already activated)', $2, $1);
  END IF;
  RETURN NEXT claimed;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_advance_checkpoint(
  partition text, name text, owner_epoch bigint, watermark bigint,
  observed_rows bigint, now_ms bigint DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  current sync_backfill_checkpoints;
  head bigint;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('name', $2);
  PERFORM sync_assert_nonnegative('owner_epoch', $3);
  PERFORM sync_assert_nonnegative('watermark', $4);
  PERFORM sync_assert_nonnegative('observed_rows', $5);
  -- The row lock makes the epoch, state and watermark checks and the write
  -- one step against a concurrent claim.
  SELECT c.* INTO current FROM sync_backfill_checkpoints c
   WHERE c.partition = $1 AND c.name = $2 FOR UPDATE;
  IF NOT FOUND OR current.state <> 'backfilling' OR current.owner_epoch <> $3 THEN
    RETURN false;
  END IF;
  IF $4 < current.watermark THEN
    RAISE EXCEPTION 'invalid argument: watermark % is below the stored watermark %; it never goes down', $4, current.watermark
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT p.max_commit_seq INTO head FROM sync_partitions p WHERE p.partition = $1;
  IF $4 > coalesce(head, 0) THEN
    RAISE EXCEPTION 'invalid argument: watermark % is above the partition''s last commit %', $4, coalesce(head, 0)
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  UPDATE sync_backfill_checkpoints c
     SET watermark = $4, observed_rows = $5, updated_at_ms = coalesce($6, sync_now_ms())
   WHERE c.partition = $1 AND c.name = $2;
  RETURN true;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_activate_checkpoint(
  partition text, name text, owner_epoch bigint, watermark bigint,
  sources text[], now_ms bigint DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  required integer;
  current sync_backfill_checkpoints;
  coverage text;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('name', $2);
  PERFORM sync_assert_nonnegative('owner_epoch', $3);
  PERFORM sync_assert_nonnegative('watermark', $4);
  PERFORM sync_assert_sources($5);
  PERFORM sync_lock_partition($1);
  SELECT c.* INTO current
    FROM sync_backfill_checkpoints c WHERE c.partition = $1 AND c.name = $2 FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'sync.storage.checkpoint_not_declared'
      USING DETAIL = format('no checkpoint %L in partition %L', $2, $1);
  END IF;
  SELECT f.required_writer_version INTO required
    FROM sync_writer_fence f WHERE f.partition = $1;
  IF required IS NULL OR required < current.schema_version THEN
    RAISE EXCEPTION 'sync.storage.checkpoint_fence_missing'
      USING DETAIL = format('partition %L: checkpoint %L needs a writer fence >= %s, found %s',
                            $1, $2, current.schema_version, coalesce(required::text, 'none'));
  END IF;
  IF current.state <> 'backfilling' OR current.owner_epoch <> $3 OR current.watermark <> $4 THEN
    RETURN 'stale';
  END IF;
  coverage := sync_source_changes_above($1, $5, $4);
  IF coverage <> 'clean' THEN
    RETURN CASE coverage WHEN 'changed' THEN 'stale' ELSE 'unverifiable' END;
  END IF;
  UPDATE sync_backfill_checkpoints c
     SET state = 'activated', updated_at_ms = coalesce($6, sync_now_ms())
   WHERE c.partition = $1 AND c.name = $2;
  PERFORM pg_notify('sync_checkpoint_activated', jsonb_build_object('partition', $1, 'name', $2)::text);
  RETURN 'activated';
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_install_checkpoint(
  partition text, name text, schema_version integer, now_ms bigint DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  p_partition ALIAS FOR $1;
  p_name ALIAS FOR $2;
  p_version ALIAS FOR $3;
BEGIN
  PERFORM sync_assert_key('partition', p_partition);
  PERFORM sync_assert_key('name', p_name);
  PERFORM sync_assert_nonnegative('schema_version', p_version, 1);
  INSERT INTO sync_partitions AS p (partition) VALUES (p_partition)
  ON CONFLICT (partition) DO UPDATE SET max_commit_seq = p.max_commit_seq;
  INSERT INTO sync_backfill_checkpoints AS c (
    partition, name, schema_version, state, watermark,
    owner_epoch, observed_rows, updated_at_ms)
  VALUES (p_partition, p_name, p_version, 'declared', 0, 0, 0, coalesce($4, sync_now_ms()))
  ON CONFLICT (partition, name) DO NOTHING;
  INSERT INTO sync_writer_fence AS f (partition, required_writer_version)
  VALUES (p_partition, p_version)
  ON CONFLICT (partition) DO UPDATE
    SET required_writer_version = GREATEST(f.required_writer_version, EXCLUDED.required_writer_version);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_set_schema_version(schema_version bigint, layouts text DEFAULT '{}')
RETURNS void
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  stored sync_schema_meta;
  bad_table text;
BEGIN
  PERFORM sync_assert_nonnegative('schema_version', $1, 1);
  IF $2 IS NULL THEN
    RAISE EXCEPTION 'invalid argument: layouts must be a JSON object, not NULL'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF $1 > 2147483647 THEN
    RAISE EXCEPTION 'invalid argument: schema_version must be at most 2147483647, got %', $1
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF jsonb_typeof($2::jsonb) <> 'object' THEN
    RAISE EXCEPTION 'invalid argument: layouts must be a JSON object, got %', jsonb_typeof($2::jsonb)
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT t.key INTO bad_table
    FROM jsonb_each($2::jsonb) t
   WHERE t.key = '' OR jsonb_typeof(t.value) <> 'array'
      OR EXISTS (SELECT 1 FROM jsonb_array_elements(t.value) col
                  WHERE jsonb_typeof(col) <> 'object'
                     OR jsonb_typeof(col -> 'name') IS DISTINCT FROM 'string' OR col ->> 'name' = ''
                     OR jsonb_typeof(col -> 'type') IS DISTINCT FROM 'string' OR col ->> 'type' = ''
                     OR jsonb_typeof(col -> 'nullable') IS DISTINCT FROM 'boolean')
   LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'invalid argument: layouts[%] must be an array of {"name": text, "type": text, "nullable": boolean}', bad_table
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_locks l
                  WHERE l.locktype = 'relation' AND l.relation = 'sync_partitions'::regclass
                    AND l.pid = pg_backend_pid() AND l.mode = 'ExclusiveLock' AND l.granted) THEN
    RAISE EXCEPTION 'sync_set_schema_version must run after sync_begin_schema_change() in the same transaction'
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'Start the schema-bump transaction with SELECT sync_begin_schema_change();';
  END IF;
  SELECT m.* INTO stored FROM sync_schema_meta m WHERE m.id = 1;
  IF FOUND AND stored.schema_version > $1 THEN
    RAISE EXCEPTION 'stored schema version % is newer than the configured schema (%) — refusing to lower it', stored.schema_version, $1
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  IF FOUND AND stored.schema_version = $1 AND stored.layouts::jsonb IS DISTINCT FROM $2::jsonb THEN
    RAISE EXCEPTION 'stored schema layouts disagree with the new marker at version %', $1
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  INSERT INTO sync_schema_meta AS m (id, schema_version, layouts) VALUES (1, $1, $2)
  ON CONFLICT (id) DO UPDATE SET schema_version = EXCLUDED.schema_version, layouts = EXCLUDED.layouts;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_append_commit(
  partition text, client_id text, client_commit_id text, actor_id text,
  created_at_ms bigint, writer_version bigint,
  tbls text[], row_ids text[], ops smallint[], row_versions bigint[],
  scopes jsonb[], payloads bytea[])
RETURNS jsonb
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  n integer := cardinality($7);
  stored jsonb;
  seq bigint;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('client_id', $2);
  PERFORM sync_assert_key('client_commit_id', $3);
  PERFORM sync_assert_key('actor_id', $4);
  PERFORM sync_assert_nonnegative('created_at_ms', $5);
  PERFORM sync_assert_sources($7);
  IF $8 IS NULL OR $9 IS NULL OR $10 IS NULL OR $11 IS NULL OR $12 IS NULL
     OR cardinality($8) <> n OR cardinality($9) <> n OR cardinality($10) <> n
     OR cardinality($11) <> n OR cardinality($12) <> n THEN
    RAISE EXCEPTION 'invalid argument: the change arrays must all be non-NULL and of the same length (% tables)', n
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF array_position($8, NULL) IS NOT NULL OR array_position($9, NULL) IS NOT NULL
     OR array_position($11, NULL) IS NOT NULL THEN
    RAISE EXCEPTION 'invalid argument: row ids, ops and scopes must not contain NULL'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- Row ids are keys like every other name (non-empty, at most 512
  -- characters); row versions are NULL or non-negative.
  IF EXISTS (SELECT 1 FROM unnest($8) r WHERE r = '' OR length(r) > 512) THEN
    RAISE EXCEPTION 'invalid argument: every row id must be a non-empty string of at most 512 characters'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF EXISTS (SELECT 1 FROM unnest($10) v WHERE v < 0) THEN
    RAISE EXCEPTION 'invalid argument: row versions must be NULL or at least 0'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;

  PERFORM sync_lock_partition($1);
  SELECT r.result INTO stored FROM sync_push_results r
   WHERE r.partition = $1 AND r.client_id = $2 AND r.client_commit_id = $3;
  IF FOUND THEN
    RETURN stored || '{"replayed": true}'::jsonb;
  END IF;

  UPDATE sync_partitions p SET max_commit_seq = p.max_commit_seq + 1
   WHERE p.partition = $1
  RETURNING p.max_commit_seq INTO seq;
  INSERT INTO sync_commits (partition, commit_seq, client_id, client_commit_id, actor_id, created_at_ms, writer_version)
  VALUES ($1, seq, $2, $3, $4, $5, $6);
  INSERT INTO sync_changes (partition, commit_seq, idx, tbl, row_id, op, row_version, scopes, payload)
  SELECT $1, seq, (c.i - 1)::integer, c.tbl, c.row_id, c.op, c.row_version, c.scope, c.payload
    FROM unnest($7, $8, $9, $10, $11, $12) WITH ORDINALITY
         AS c(tbl, row_id, op, row_version, scope, payload, i);
  INSERT INTO sync_change_scopes (partition, tbl, var, value, commit_seq)
  SELECT DISTINCT $1, c.tbl, s.key,
         CASE jsonb_typeof(v.value) WHEN 'string' THEN v.value #>> '{}' ELSE v.value::text END, seq
    FROM unnest($7, $11) AS c(tbl, scope)
   CROSS JOIN LATERAL jsonb_each(c.scope) AS s(key, value)
   CROSS JOIN LATERAL jsonb_array_elements(
         CASE jsonb_typeof(s.value) WHEN 'array' THEN s.value ELSE jsonb_build_array(s.value) END) AS v(value)
  ON CONFLICT DO NOTHING;
  stored := jsonb_build_object('status', 'applied', 'commitSeq', seq);
  INSERT INTO sync_push_results (partition, client_id, client_commit_id, result)
  VALUES ($1, $2, $3, stored);
  RETURN stored || '{"replayed": false}'::jsonb;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
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
-- +goose StatementEnd

CREATE TRIGGER sync_changes_follow_commit
AFTER INSERT ON sync_changes FOR EACH ROW EXECUTE FUNCTION sync_changes_follow_commit();
CREATE TRIGGER sync_change_scopes_follow_commit
AFTER INSERT ON sync_change_scopes FOR EACH ROW EXECUTE FUNCTION sync_changes_follow_commit();

-- WHEN keeps a legal allocation (+1), lock or fence raise (unchanged) and
-- prune (horizon up to the head) from calling any function at all.
CREATE TRIGGER sync_partitions_guard_update
BEFORE UPDATE ON sync_partitions FOR EACH ROW
WHEN (NEW.partition <> OLD.partition
      OR NEW.max_commit_seq < OLD.max_commit_seq OR NEW.max_commit_seq > OLD.max_commit_seq + 1
      OR NEW.horizon_seq < OLD.horizon_seq OR NEW.horizon_seq > NEW.max_commit_seq)
EXECUTE FUNCTION sync_partitions_guard();
CREATE TRIGGER sync_partitions_guard_insert
BEFORE INSERT ON sync_partitions FOR EACH ROW
WHEN (NEW.max_commit_seq NOT IN (0, 1) OR NEW.horizon_seq <> 0)
EXECUTE FUNCTION sync_partitions_guard();

-- Re-harden what CREATE OR REPLACE reset (it drops SET and SECURITY
-- DEFINER): the same rules as 00006, plus the new functions. The two row
-- triggers of the log and sync_xid_is_current stay unpinned (qualified
-- names; the latter must inline).
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
    IF split_part(f::text, '(', 1) IN ('sync_serve_gate', 'sync_xid_is_current', 'syncular_writer_fence',
                                       'sync_changes_follow_commit') THEN
      EXECUTE format('ALTER FUNCTION %s RESET search_path', f);
    ELSE
      EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, %I, pg_temp', f, current_schema());
    END IF;
    IF split_part(f::text, '(', 1) = ANY (definer) THEN
      EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER', f);
    END IF;
  END LOOP;
END;
$$;
-- +goose StatementEnd

-- Every writer (an upstream server's login too, whatever its groups) runs
-- the fence trigger, which calls it: it only tells whether an xid is mine.
GRANT EXECUTE ON FUNCTION sync_xid_is_current(xid) TO PUBLIC;
GRANT EXECUTE ON FUNCTION sync_security_audit() TO sync_reader;

-- A sync server allocates seqs (UPDATE or INSERT ... ON CONFLICT DO UPDATE of
-- max_commit_seq, the guard keeps it to +1), registers partitions and stamps
-- their last authentication. Column-level grants: no horizon, no epoch
-- rotation, and no LOCK TABLE beyond ROW EXCLUSIVE (that needs table-level
-- UPDATE, DELETE or TRUNCATE).
REVOKE INSERT, UPDATE ON sync_partitions, sync_partition_registry FROM sync_writer;
GRANT INSERT (partition, max_commit_seq, horizon_seq), UPDATE (max_commit_seq) ON sync_partitions TO sync_writer;
GRANT INSERT (partition, log_epoch, epoch_required, last_authenticated_at_ms), UPDATE (last_authenticated_at_ms)
  ON sync_partition_registry TO sync_writer;

-- Postgres before 15 (and databases upgraded from it) let PUBLIC create in
-- the public schema: a login could plant objects on everyone's path.
-- +goose StatementBegin
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'public') THEN
    REVOKE CREATE ON SCHEMA public FROM PUBLIC;
  END IF;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- PUBLIC's CREATE on the public schema is not given back: it was a hole.
REVOKE INSERT (partition, max_commit_seq, horizon_seq), UPDATE (max_commit_seq) ON sync_partitions FROM sync_writer;
REVOKE INSERT (partition, log_epoch, epoch_required, last_authenticated_at_ms), UPDATE (last_authenticated_at_ms)
  ON sync_partition_registry FROM sync_writer;
GRANT INSERT, UPDATE ON sync_partitions, sync_partition_registry TO sync_writer;
DROP TRIGGER sync_partitions_guard_insert ON sync_partitions;
DROP TRIGGER sync_partitions_guard_update ON sync_partitions;
DROP TRIGGER sync_change_scopes_follow_commit ON sync_change_scopes;
DROP TRIGGER sync_changes_follow_commit ON sync_changes;
DROP FUNCTION sync_partitions_guard();
DROP FUNCTION sync_changes_follow_commit();

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_claim_checkpoint(
  partition text, name text, schema_version integer, now_ms bigint DEFAULT NULL)
RETURNS SETOF sync_backfill_checkpoints
LANGUAGE plpgsql
ROWS 1
AS $$
#variable_conflict use_column
DECLARE
  claimed sync_backfill_checkpoints;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('name', $2);
  PERFORM sync_assert_nonnegative('schema_version', $3, 1);
  UPDATE sync_backfill_checkpoints c
     SET owner_epoch = c.owner_epoch + 1,
         state = CASE WHEN c.state = 'declared' THEN 'backfilling' ELSE c.state END,
         schema_version = $3,
         updated_at_ms = coalesce($4, sync_now_ms())
   WHERE c.partition = $1 AND c.name = $2 AND c.state <> 'activated'
  RETURNING c.* INTO claimed;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'sync.storage.checkpoint_not_declared'
      USING DETAIL = format('no claimable checkpoint %L in partition %L (missing or already activated)', $2, $1);
  END IF;
  RETURN NEXT claimed;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_advance_checkpoint(
  partition text, name text, owner_epoch bigint, watermark bigint,
  observed_rows bigint, now_ms bigint DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  changed bigint;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('name', $2);
  PERFORM sync_assert_nonnegative('owner_epoch', $3);
  PERFORM sync_assert_nonnegative('watermark', $4);
  PERFORM sync_assert_nonnegative('observed_rows', $5);
  WITH updated AS (
    UPDATE sync_backfill_checkpoints c
       SET watermark = $4, observed_rows = $5, updated_at_ms = coalesce($6, sync_now_ms())
     WHERE c.partition = $1 AND c.name = $2 AND c.owner_epoch = $3
    RETURNING 1
  )
  SELECT count(*) INTO changed FROM updated;
  RETURN changed = 1;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_activate_checkpoint(
  partition text, name text, owner_epoch bigint, watermark bigint,
  sources text[], now_ms bigint DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  required integer;
  version integer;
  coverage text;
  changed bigint;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('name', $2);
  PERFORM sync_assert_nonnegative('owner_epoch', $3);
  PERFORM sync_assert_nonnegative('watermark', $4);
  PERFORM sync_assert_sources($5);
  PERFORM sync_lock_partition($1);
  SELECT c.schema_version INTO version
    FROM sync_backfill_checkpoints c WHERE c.partition = $1 AND c.name = $2;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'sync.storage.checkpoint_not_declared'
      USING DETAIL = format('no checkpoint %L in partition %L', $2, $1);
  END IF;
  SELECT f.required_writer_version INTO required
    FROM sync_writer_fence f WHERE f.partition = $1;
  IF required IS NULL OR required < version THEN
    RAISE EXCEPTION 'sync.storage.checkpoint_fence_missing'
      USING DETAIL = format('partition %L: checkpoint %L needs a writer fence >= %s, found %s',
                            $1, $2, version, coalesce(required::text, 'none'));
  END IF;
  coverage := sync_source_changes_above($1, $5, $4);
  IF coverage <> 'clean' THEN
    RETURN CASE coverage WHEN 'changed' THEN 'stale' ELSE 'unverifiable' END;
  END IF;
  WITH updated AS (
    UPDATE sync_backfill_checkpoints c
       SET state = 'activated', watermark = $4, updated_at_ms = coalesce($6, sync_now_ms())
     WHERE c.partition = $1 AND c.name = $2 AND c.owner_epoch = $3 AND c.state <> 'activated'
    RETURNING 1
  )
  SELECT count(*) INTO changed FROM updated;
  IF changed <> 1 THEN
    RETURN 'stale';
  END IF;
  PERFORM pg_notify('sync_checkpoint_activated', jsonb_build_object('partition', $1, 'name', $2)::text);
  RETURN 'activated';
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_install_checkpoint(
  partition text, name text, schema_version integer, now_ms bigint DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  p_partition ALIAS FOR $1;
  p_name ALIAS FOR $2;
  p_version ALIAS FOR $3;
BEGIN
  PERFORM sync_assert_key('partition', p_partition);
  PERFORM sync_assert_key('name', p_name);
  PERFORM sync_assert_nonnegative('schema_version', p_version, 1);
  INSERT INTO sync_backfill_checkpoints AS c (
    partition, name, schema_version, state, watermark,
    owner_epoch, observed_rows, updated_at_ms)
  VALUES (p_partition, p_name, p_version, 'declared', 0, 0, 0, coalesce($4, sync_now_ms()))
  ON CONFLICT (partition, name) DO NOTHING;
  INSERT INTO sync_writer_fence AS f (partition, required_writer_version)
  VALUES (p_partition, p_version)
  ON CONFLICT (partition) DO UPDATE
    SET required_writer_version = GREATEST(f.required_writer_version, EXCLUDED.required_writer_version);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_set_schema_version(schema_version bigint, layouts text DEFAULT '{}')
RETURNS void
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  stored sync_schema_meta;
BEGIN
  PERFORM sync_assert_nonnegative('schema_version', $1, 1);
  IF $2 IS NULL THEN
    RAISE EXCEPTION 'invalid argument: layouts must be a JSON object, not NULL'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF jsonb_typeof($2::jsonb) <> 'object' THEN
    RAISE EXCEPTION 'invalid argument: layouts must be a JSON object, got %', jsonb_typeof($2::jsonb)
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_locks l
                  WHERE l.locktype = 'relation' AND l.relation = 'sync_partitions'::regclass
                    AND l.pid = pg_backend_pid() AND l.mode = 'ExclusiveLock' AND l.granted) THEN
    RAISE EXCEPTION 'sync_set_schema_version must run after sync_begin_schema_change() in the same transaction'
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'Start the schema-bump transaction with SELECT sync_begin_schema_change();';
  END IF;
  SELECT m.* INTO stored FROM sync_schema_meta m WHERE m.id = 1;
  IF FOUND AND stored.schema_version > $1 THEN
    RAISE EXCEPTION 'stored schema version % is newer than the configured schema (%) — refusing to lower it', stored.schema_version, $1
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  IF FOUND AND stored.schema_version = $1 AND stored.layouts::jsonb IS DISTINCT FROM $2::jsonb THEN
    RAISE EXCEPTION 'stored schema layouts disagree with the new marker at version %', $1
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  INSERT INTO sync_schema_meta AS m (id, schema_version, layouts) VALUES (1, $1, $2)
  ON CONFLICT (id) DO UPDATE SET schema_version = EXCLUDED.schema_version, layouts = EXCLUDED.layouts;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_append_commit(
  partition text, client_id text, client_commit_id text, actor_id text,
  created_at_ms bigint, writer_version bigint,
  tbls text[], row_ids text[], ops smallint[], row_versions bigint[],
  scopes jsonb[], payloads bytea[])
RETURNS jsonb
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  n integer := cardinality($7);
  stored jsonb;
  seq bigint;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('client_id', $2);
  PERFORM sync_assert_key('client_commit_id', $3);
  PERFORM sync_assert_key('actor_id', $4);
  PERFORM sync_assert_nonnegative('created_at_ms', $5);
  PERFORM sync_assert_sources($7);
  IF $8 IS NULL OR $9 IS NULL OR $10 IS NULL OR $11 IS NULL OR $12 IS NULL
     OR cardinality($8) <> n OR cardinality($9) <> n OR cardinality($10) <> n
     OR cardinality($11) <> n OR cardinality($12) <> n THEN
    RAISE EXCEPTION 'invalid argument: the change arrays must all be non-NULL and of the same length (% tables)', n
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF array_position($8, NULL) IS NOT NULL OR array_position($9, NULL) IS NOT NULL
     OR array_position($11, NULL) IS NOT NULL THEN
    RAISE EXCEPTION 'invalid argument: row ids, ops and scopes must not contain NULL'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;

  PERFORM sync_lock_partition($1);
  SELECT r.result INTO stored FROM sync_push_results r
   WHERE r.partition = $1 AND r.client_id = $2 AND r.client_commit_id = $3;
  IF FOUND THEN
    RETURN stored || '{"replayed": true}'::jsonb;
  END IF;

  UPDATE sync_partitions p SET max_commit_seq = p.max_commit_seq + 1
   WHERE p.partition = $1
  RETURNING p.max_commit_seq INTO seq;
  INSERT INTO sync_commits (partition, commit_seq, client_id, client_commit_id, actor_id, created_at_ms, writer_version)
  VALUES ($1, seq, $2, $3, $4, $5, $6);
  INSERT INTO sync_changes (partition, commit_seq, idx, tbl, row_id, op, row_version, scopes, payload)
  SELECT $1, seq, (c.i - 1)::integer, c.tbl, c.row_id, c.op, c.row_version, c.scope, c.payload
    FROM unnest($7, $8, $9, $10, $11, $12) WITH ORDINALITY
         AS c(tbl, row_id, op, row_version, scope, payload, i);
  INSERT INTO sync_change_scopes (partition, tbl, var, value, commit_seq)
  SELECT DISTINCT $1, c.tbl, s.key,
         CASE jsonb_typeof(v.value) WHEN 'string' THEN v.value #>> '{}' ELSE v.value::text END, seq
    FROM unnest($7, $11) AS c(tbl, scope)
   CROSS JOIN LATERAL jsonb_each(c.scope) AS s(key, value)
   CROSS JOIN LATERAL jsonb_array_elements(
         CASE jsonb_typeof(s.value) WHEN 'array' THEN s.value ELSE jsonb_build_array(s.value) END) AS v(value)
  ON CONFLICT DO NOTHING;
  stored := jsonb_build_object('status', 'applied', 'commitSeq', seq);
  INSERT INTO sync_push_results (partition, client_id, client_commit_id, result)
  VALUES ($1, $2, $3, stored);
  RETURN stored || '{"replayed": false}'::jsonb;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION syncular_writer_fence()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
  required integer;
BEGIN
  SELECT f.required_writer_version INTO required
    FROM sync_writer_fence f
   WHERE f.partition = NEW.partition;
  IF FOUND AND (NEW.writer_version IS NULL OR NEW.writer_version < required) THEN
    RAISE EXCEPTION 'sync.storage.writer_fence_rejected'
      USING DETAIL = format(
        'partition %L requires writer_version >= %s; the commit offered %s',
        NEW.partition, required, coalesce(NEW.writer_version::text, 'NULL')),
      HINT = 'Upgrade the writer to the schema version the fence requires.';
  END IF;
  RETURN NEW;
END;
$$;
-- +goose StatementEnd

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

DROP FUNCTION sync_xid_is_current(xid);
-- The restored bodies get 00006's hardening back.
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
GRANT EXECUTE ON FUNCTION sync_security_audit() TO sync_reader;
