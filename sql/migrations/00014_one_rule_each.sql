-- One implementation of each rule (issue 13).
--
-- * The schema-marker rules ("the stored version never goes down"; "at the
--   same version the layouts match, column by column") live in
--   sync_check_schema_version, with the upstream server's words; the bump
--   (sync_set_schema_version) and a server's start-up check (gosync
--   EnsureSchema) both call it.
-- * "Pending" (a checkpoint that is not activated) is the view
--   sync_pending_checkpoints. A plain view: the planner expands it into the
--   caller's query, so sync_serve_check and the inlined sync_serve_gate read
--   the same index scans as before (sync_backfill_checkpoints_pending and the
--   primary key), and a distributed table read through it is still a read
--   of that table (a view is rewritten before Citus plans the query). The
--   version stays the caller's filter (`WHERE schema_version = $v`): a view
--   takes no parameters, and a set-returning function in its place would
--   either not inline or, as a SQL function, not run on Citus. The partial
--   index's predicate below stays literal: Postgres matches an index
--   predicate against the query's own quals and cannot name a view there.
-- * "Not declared" (by name for every partition, or by (partition, name)
--   pair) is sync_first_undeclared_checkpoint, the index-driven walk that
--   was sync_serve_check's loop; sync_serve_check calls it for the
--   checkpoints elsewhere and EnsureSchema's incomplete-checkpoint check
--   calls it alone. Its array checks are sync_assert_declarations.
--
-- Function bodies are verbatim copies of sql/functions/*.sql as of this
-- migration. The Down restores the replaced bodies as 00003 (sync_serve_gate),
-- 00007 (sync_set_schema_version) and 00008 (sync_serve_check) left them.

-- +goose Up
-- The predicate stays literal in the index (see above): keep the two equal.
CREATE VIEW sync_pending_checkpoints AS
SELECT c.partition, c.name, c.schema_version, c.state, c.watermark, c.owner_epoch,
       c.observed_rows, c.updated_at_ms
  FROM sync_backfill_checkpoints c
 WHERE c.state <> 'activated';

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_assert_declarations(
  declared_names text[], declared_partitions text[], declared_partition_names text[])
RETURNS boolean
LANGUAGE plpgsql
IMMUTABLE
AS $$
BEGIN
  IF $1 IS NULL OR $2 IS NULL OR $3 IS NULL OR cardinality($2) <> cardinality($3)
     OR array_position($1, NULL) IS NOT NULL OR array_position($2, NULL) IS NOT NULL
     OR array_position($3, NULL) IS NOT NULL THEN
    RAISE EXCEPTION 'invalid argument: declared_names, declared_partitions and declared_partition_names must be arrays without NULLs, the last two of the same length'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  RETURN true;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_first_undeclared_checkpoint(
  schema_version integer, declared_names text[] DEFAULT '{}', declared_partitions text[] DEFAULT '{}',
  declared_partition_names text[] DEFAULT '{}',
  OUT checkpoint_partition text, OUT checkpoint_name text)
LANGUAGE plpgsql
STABLE
AS $$
#variable_conflict use_column
DECLARE
  p_version ALIAS FOR $1;
  pending_name text := '';
  found_partition text;
BEGIN
  PERFORM sync_assert_nonnegative('schema_version', p_version);
  PERFORM sync_assert_declarations($2, $3, $4);
  LOOP
    SELECT c.name INTO pending_name FROM sync_pending_checkpoints c
     WHERE c.schema_version = p_version AND c.name > pending_name
     ORDER BY c.name LIMIT 1;
    EXIT WHEN NOT FOUND;
    CONTINUE WHEN pending_name = ANY ($2);
    -- The name as a range, not an equality: with name = $n, the generic
    -- plan (plpgsql's, after five calls) may read the primary key in
    -- partition order filtering on name — a scan of every partition when
    -- the undeclared name is rare. (name, partition) order only the pending
    -- index gives.
    SELECT c.partition INTO found_partition FROM sync_pending_checkpoints c
     WHERE c.schema_version = p_version AND c.name >= pending_name AND c.name <= pending_name
       AND c.partition NOT IN (SELECT d.p FROM unnest($3, $4) AS d(p, n) WHERE d.n = pending_name)
     ORDER BY c.name, c.partition LIMIT 1;
    IF FOUND AND (checkpoint_partition IS NULL
                  OR (found_partition, pending_name) < (checkpoint_partition, checkpoint_name)) THEN
      checkpoint_partition := found_partition;
      checkpoint_name := pending_name;
    END IF;
  END LOOP;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_check_schema_version(schema_version bigint, layouts text DEFAULT '{}')
RETURNS text
LANGUAGE plpgsql
STABLE
AS $$
#variable_conflict use_column
DECLARE
  configured jsonb;
  stored sync_schema_meta;
  stored_layouts jsonb;
  bad_table text;
  tbl text;
  want jsonb;
  have jsonb;
  col text;
  mismatch text;
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
  configured := $2::jsonb;
  IF jsonb_typeof(configured) <> 'object' THEN
    RAISE EXCEPTION 'invalid argument: layouts must be a JSON object, got %', jsonb_typeof(configured)
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT t.key INTO bad_table
    FROM jsonb_each(configured) t
   WHERE t.key = '' OR jsonb_typeof(t.value) <> 'array'
      OR EXISTS (SELECT 1 FROM jsonb_array_elements(t.value) c
                  WHERE jsonb_typeof(c) <> 'object'
                     OR jsonb_typeof(c -> 'name') IS DISTINCT FROM 'string' OR c ->> 'name' = ''
                     OR jsonb_typeof(c -> 'type') IS DISTINCT FROM 'string' OR c ->> 'type' = ''
                     OR jsonb_typeof(c -> 'nullable') IS DISTINCT FROM 'boolean')
   LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'invalid argument: layouts[%] must be an array of {"name": text, "type": text, "nullable": boolean}', bad_table
      USING ERRCODE = 'invalid_parameter_value';
  END IF;

  SELECT m.* INTO stored FROM sync_schema_meta m WHERE m.id = 1;
  IF NOT FOUND THEN
    RETURN 'absent';
  END IF;
  IF stored.schema_version < $1 THEN
    RETURN 'older';
  END IF;
  IF stored.schema_version > $1 THEN
    RAISE EXCEPTION 'stored schema version % is newer than the configured schema (%) — refusing to run an older server against a migrated database',
      stored.schema_version, $1
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;

  -- Same version: compare column by column. A stored marker that is not a
  -- JSON object (another writer's) disagrees with every configured schema.
  BEGIN
    stored_layouts := coalesce(nullif(stored.layouts, ''), '{}')::jsonb;
  EXCEPTION WHEN invalid_text_representation THEN
    stored_layouts := NULL;
  END;
  IF jsonb_typeof(stored_layouts) IS DISTINCT FROM 'object' THEN
    mismatch := 'the stored layouts are not a JSON object';
  END IF;
  IF mismatch IS NULL THEN
    FOR tbl, want IN SELECT t.key, t.value FROM jsonb_each(configured) t ORDER BY t.key COLLATE "C" LOOP
      have := CASE WHEN jsonb_typeof(stored_layouts -> tbl) = 'array' THEN stored_layouts -> tbl ELSE '[]'::jsonb END;
      SELECT coalesce(want -> i ->> 'name', have -> i ->> 'name', '') INTO col
        FROM generate_series(0, greatest(jsonb_array_length(want), jsonb_array_length(have)) - 1) AS g(i)
       WHERE want -> i IS NULL OR have -> i IS NULL
          OR (want -> i ->> 'name', want -> i ->> 'type', want -> i -> 'nullable')
             IS DISTINCT FROM (have -> i ->> 'name', have -> i ->> 'type', have -> i -> 'nullable')
       ORDER BY i LIMIT 1;
      IF FOUND THEN
        mismatch := format('table %s column %s', to_json(tbl)::text, to_json(col)::text);
        EXIT;
      END IF;
    END LOOP;
  END IF;
  IF mismatch IS NULL THEN
    SELECT format('table %s', to_json(t.key)::text) INTO mismatch
      FROM jsonb_each(stored_layouts) t
     WHERE NOT (configured ? t.key)
     ORDER BY t.key COLLATE "C" LIMIT 1;
  END IF;
  IF mismatch IS NOT NULL THEN
    RAISE EXCEPTION 'stored schema layouts disagree with the configured schema at version % (%) — refusing to serve a database whose stored rows the running code cannot decode',
      $1, mismatch
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;
  RETURN 'same';
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_set_schema_version(schema_version bigint, layouts text DEFAULT '{}')
RETURNS void
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
BEGIN
  PERFORM sync_check_schema_version($1, $2);
  IF NOT EXISTS (SELECT 1 FROM pg_locks l
                  WHERE l.locktype = 'relation' AND l.relation = 'sync_partitions'::regclass
                    AND l.pid = pg_backend_pid() AND l.mode = 'ExclusiveLock' AND l.granted) THEN
    RAISE EXCEPTION 'sync_set_schema_version must run after sync_begin_schema_change() in the same transaction'
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'Start the schema-bump transaction with SELECT sync_begin_schema_change();';
  END IF;
  INSERT INTO sync_schema_meta AS m (id, schema_version, layouts) VALUES (1, $1, $2)
  ON CONFLICT (id) DO UPDATE SET schema_version = EXCLUDED.schema_version, layouts = EXCLUDED.layouts;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_serve_check(
  partition text, running_schema_version integer, expected_log_epoch text DEFAULT NULL,
  declared_names text[] DEFAULT '{}', declared_partitions text[] DEFAULT '{}',
  declared_partition_names text[] DEFAULT '{}',
  OUT refusal text, OUT stored_schema_version bigint, OUT log_epoch text,
  OUT checkpoint_partition text, OUT checkpoint_name text)
LANGUAGE plpgsql
STABLE
AS $$
#variable_conflict use_column
DECLARE
  p_partition ALIAS FOR $1;
  p_version ALIAS FOR $2;
BEGIN
  PERFORM sync_assert_key('partition', p_partition);
  PERFORM sync_assert_nonnegative('running_schema_version', p_version);
  PERFORM sync_assert_declarations($4, $5, $6);

  stored_schema_version := coalesce((SELECT m.schema_version FROM sync_schema_meta m WHERE m.id = 1), 0);
  log_epoch := (SELECT r.log_epoch FROM sync_partition_registry r WHERE r.partition = p_partition);
  IF stored_schema_version <> p_version THEN
    refusal := 'schema';
    RETURN;
  END IF;
  IF $3 IS NOT NULL AND log_epoch IS DISTINCT FROM $3 THEN
    refusal := 'epoch';
    RETURN;
  END IF;

  SELECT c.name INTO checkpoint_name FROM sync_pending_checkpoints c
   WHERE c.partition = p_partition AND c.schema_version = p_version
   ORDER BY c.name LIMIT 1;
  IF FOUND THEN
    refusal := 'checkpoint';
    checkpoint_partition := p_partition;
    RETURN;
  END IF;

  -- Elsewhere. Nothing pending at all (the steady state) costs one index
  -- probe, the walk's first step, and no nested call. (ORDER BY keeps it on
  -- the pending index: mid-migration a bare EXISTS would plan a seq scan.)
  PERFORM FROM sync_pending_checkpoints c WHERE c.schema_version = p_version ORDER BY c.name LIMIT 1;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  SELECT u.checkpoint_partition, u.checkpoint_name INTO checkpoint_partition, checkpoint_name
    FROM sync_first_undeclared_checkpoint(p_version, $4, $5, $6) u;
  IF checkpoint_partition IS NOT NULL THEN
    refusal := 'checkpoint';
  END IF;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_serve_gate(partition text, running_schema_version integer)
RETURNS TABLE (stored_schema_version bigint, log_epoch text, pending jsonb)
LANGUAGE sql
STABLE
ROWS 1
AS $$
  SELECT
    coalesce((SELECT m.schema_version FROM sync_schema_meta m WHERE m.id = 1), 0),
    (SELECT r.log_epoch FROM sync_partition_registry r WHERE r.partition = $1),
    coalesce((SELECT jsonb_agg(jsonb_build_object('partition', c.partition, 'name', c.name)
                               ORDER BY c.partition, c.name)
                FROM sync_pending_checkpoints c
               WHERE c.schema_version = $2),
             '[]'::jsonb)
   WHERE sync_assert_key('partition', $1)
     AND sync_assert_nonnegative('running_schema_version', $2)
$$;
-- +goose StatementEnd

-- Hardened as 00006 hardens every sync_* function: no PUBLIC access, a
-- pinned search_path (pg_catalog, this schema, pg_temp last). CREATE OR
-- REPLACE resets SET and SECURITY DEFINER, so the replaced functions get
-- theirs back: sync_set_schema_version stays SECURITY DEFINER (it writes the
-- marker), sync_serve_gate stays unpinned (it must inline). The new
-- functions only read what sync_reader may read: SECURITY INVOKER.
-- +goose StatementBegin
DO $$
BEGIN
  REVOKE EXECUTE ON FUNCTION sync_assert_declarations(text[], text[], text[]) FROM PUBLIC;
  REVOKE EXECUTE ON FUNCTION sync_first_undeclared_checkpoint(integer, text[], text[], text[]) FROM PUBLIC;
  REVOKE EXECUTE ON FUNCTION sync_check_schema_version(bigint, text) FROM PUBLIC;
  EXECUTE format('ALTER FUNCTION sync_assert_declarations(text[], text[], text[]) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  EXECUTE format('ALTER FUNCTION sync_first_undeclared_checkpoint(integer, text[], text[], text[]) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  EXECUTE format('ALTER FUNCTION sync_check_schema_version(bigint, text) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  EXECUTE format('ALTER FUNCTION sync_set_schema_version(bigint, text) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  EXECUTE format('ALTER FUNCTION sync_serve_check(text, integer, text, text[], text[], text[]) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  ALTER FUNCTION sync_set_schema_version(bigint, text) SECURITY DEFINER;
END;
$$;
-- +goose StatementEnd
REVOKE ALL ON sync_pending_checkpoints FROM PUBLIC;
GRANT SELECT ON sync_pending_checkpoints TO sync_reader;
GRANT EXECUTE ON FUNCTION sync_assert_declarations(text[], text[], text[]),
  sync_first_undeclared_checkpoint(integer, text[], text[], text[]),
  sync_check_schema_version(bigint, text) TO sync_reader;

-- +goose Down
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
CREATE OR REPLACE FUNCTION sync_serve_check(
  partition text, running_schema_version integer, expected_log_epoch text DEFAULT NULL,
  declared_names text[] DEFAULT '{}', declared_partitions text[] DEFAULT '{}',
  declared_partition_names text[] DEFAULT '{}',
  OUT refusal text, OUT stored_schema_version bigint, OUT log_epoch text,
  OUT checkpoint_partition text, OUT checkpoint_name text)
LANGUAGE plpgsql
STABLE
AS $$
#variable_conflict use_column
DECLARE
  p_partition ALIAS FOR $1;
  p_version ALIAS FOR $2;
  pending_name text := '';
  found_partition text;
BEGIN
  PERFORM sync_assert_key('partition', p_partition);
  PERFORM sync_assert_nonnegative('running_schema_version', p_version);
  IF $4 IS NULL OR $5 IS NULL OR $6 IS NULL OR cardinality($5) <> cardinality($6)
     OR array_position($4, NULL) IS NOT NULL OR array_position($5, NULL) IS NOT NULL
     OR array_position($6, NULL) IS NOT NULL THEN
    RAISE EXCEPTION 'invalid argument: declared_names, declared_partitions and declared_partition_names must be arrays without NULLs, the last two of the same length'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;

  stored_schema_version := coalesce((SELECT m.schema_version FROM sync_schema_meta m WHERE m.id = 1), 0);
  log_epoch := (SELECT r.log_epoch FROM sync_partition_registry r WHERE r.partition = p_partition);
  IF stored_schema_version <> p_version THEN
    refusal := 'schema';
    RETURN;
  END IF;
  IF $3 IS NOT NULL AND log_epoch IS DISTINCT FROM $3 THEN
    refusal := 'epoch';
    RETURN;
  END IF;

  SELECT c.name INTO checkpoint_name FROM sync_backfill_checkpoints c
   WHERE c.partition = p_partition AND c.schema_version = p_version AND c.state <> 'activated'
   ORDER BY c.name LIMIT 1;
  IF FOUND THEN
    refusal := 'checkpoint';
    checkpoint_partition := p_partition;
    RETURN;
  END IF;

  LOOP
    SELECT c.name INTO pending_name FROM sync_backfill_checkpoints c
     WHERE c.schema_version = p_version AND c.state <> 'activated' AND c.name > pending_name
     ORDER BY c.name LIMIT 1;
    EXIT WHEN NOT FOUND;
    CONTINUE WHEN pending_name = ANY ($4);
    SELECT c.partition INTO found_partition FROM sync_backfill_checkpoints c
     WHERE c.schema_version = p_version AND c.state <> 'activated' AND c.name = pending_name
       AND c.partition NOT IN (SELECT d.p FROM unnest($5, $6) AS d(p, n) WHERE d.n = pending_name)
     ORDER BY c.partition LIMIT 1;
    IF FOUND AND (checkpoint_partition IS NULL
                  OR (found_partition, pending_name) < (checkpoint_partition, checkpoint_name)) THEN
      checkpoint_partition := found_partition;
      checkpoint_name := pending_name;
    END IF;
  END LOOP;
  IF checkpoint_partition IS NOT NULL THEN
    refusal := 'checkpoint';
  END IF;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_serve_gate(partition text, running_schema_version integer)
RETURNS TABLE (stored_schema_version bigint, log_epoch text, pending jsonb)
LANGUAGE sql
STABLE
ROWS 1
AS $$
  SELECT
    coalesce((SELECT m.schema_version FROM sync_schema_meta m WHERE m.id = 1), 0),
    (SELECT r.log_epoch FROM sync_partition_registry r WHERE r.partition = $1),
    coalesce((SELECT jsonb_agg(jsonb_build_object('partition', c.partition, 'name', c.name)
                               ORDER BY c.partition, c.name)
                FROM sync_backfill_checkpoints c
               WHERE c.schema_version = $2 AND c.state <> 'activated'),
             '[]'::jsonb)
   WHERE sync_assert_key('partition', $1)
     AND sync_assert_nonnegative('running_schema_version', $2)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $$
BEGIN
  EXECUTE format('ALTER FUNCTION sync_set_schema_version(bigint, text) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  EXECUTE format('ALTER FUNCTION sync_serve_check(text, integer, text, text[], text[], text[]) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  ALTER FUNCTION sync_set_schema_version(bigint, text) SECURITY DEFINER;
END;
$$;
-- +goose StatementEnd
DROP FUNCTION sync_check_schema_version(bigint, text);
DROP FUNCTION sync_first_undeclared_checkpoint(integer, text[], text[], text[]);
DROP FUNCTION sync_assert_declarations(text[], text[], text[]);
DROP VIEW sync_pending_checkpoints;
