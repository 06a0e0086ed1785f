-- The schema-marker rules, once: how the stored marker relates to a
-- configured schema (schema_version, layouts), in the upstream server's
-- vocabulary (layouts name each column's row-codec type: string, integer,
-- float, boolean, json, bytes, blob_ref, crdt). Returns
--   'absent' (no marker);
--   'older'  (the stored version is lower and the configured layouts only
--            append nullable columns to the stored tables: a bump may write
--            them; a stored table the configured schema lacks is dropped);
--   'same'   (same version, same layouts: per configured table the same
--            (name, type, nullable) at every position, and no other stored
--            table; the order of the tables and of the keys does not matter);
--   'legacy' (same version, and the stored marker is one an older gosync
--            wrote with Postgres type names that the configured codec types
--            explain: text for string/blob_ref, bytea for bytes/crdt,
--            bigint/smallint for integer, double precision/real for float,
--            jsonb for json; the bump, sync_set_schema_version, may rewrite
--            it at the same version in the codec vocabulary).
-- A stored type name an older gosync accepted that has no codec type
-- (numeric, uuid, date, timestamp, timestamptz) never matches: the remedy is
-- in the refusal's HINT. Raises object_not_in_prerequisite_state (55000),
-- with the upstream server's words, when
--   * the stored version is newer: "stored schema version S is newer than the
--     configured schema (C) — refusing to run an older server against a
--     migrated database" (the marker never goes down);
--   * the version is the same and the layouts differ: "stored schema layouts
--     disagree with the configured schema at version V (M) — refusing to
--     serve a database whose stored rows the running code cannot decode",
--     where M is table "t" column "c" for the first column (by position)
--     that differs in the first configured table (in declaration order)
--     that differs, or table "t" for the first stored table the configured
--     schema lacks (upstream skips its DDL at the same version whatever the
--     columns; gosync refuses to serve rows it would decode wrongly);
--   * a bump changes a stored table other than by appending nullable
--     columns: 'table "t": column I changed ({stored} → {configured}) — only
--     appending nullable columns is supported', 'the schema removed columns —
--     only appending nullable columns is supported; table "t" ...', 'table
--     "t": added column "c" must be nullable — existing rows have no value to
--     backfill' (upstream's ensureSchema refusals; I counts from 0).
-- A server's start-up check (gosync EnsureSchema) and the bump
-- (sync_set_schema_version) both call it, so they refuse alike.
--
-- Preconditions (else 22023, nothing read): schema_version is 1 to 2^31-1
-- (what a checkpoint's schema_version and a fence can hold: a larger marker
-- could never be lowered or matched); layouts is a JSON object of table name
-- to an array of columns {"name": text, "type": a codec type, "nullable":
-- boolean}, names non-empty, no table twice. It only reads.
CREATE OR REPLACE FUNCTION sync_check_schema_version(schema_version bigint, layouts text DEFAULT '{}')
RETURNS text
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  codec_types CONSTANT text[] := ARRAY['string', 'integer', 'float', 'boolean', 'json', 'bytes', 'blob_ref', 'crdt'];
  -- (old gosync name, codec type) pairs: the same values, so a marker that
  -- names the one where the configured schema names the other still matches.
  legacy CONSTANT text[] := ARRAY['text string', 'text blob_ref', 'bytea bytes', 'bytea crdt', 'bigint integer',
                                  'smallint integer', 'double precision float', 'real float', 'jsonb json'];
  configured json;
  stored sync_schema_meta;
  stored_layouts jsonb;
  bad_table text;
  bad_column jsonb;
  tbl text;
  want jsonb;
  have jsonb;
  i int;
  col text;
  hint text;
  mismatch text;
  is_legacy boolean := false;
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
  -- json, not jsonb: the tables keep their declaration order (the refusals
  -- name the first that differs, as upstream does) and a duplicate shows.
  configured := $2::json;
  IF json_typeof(configured) <> 'object' THEN
    RAISE EXCEPTION 'invalid argument: layouts must be a JSON object, got %', json_typeof(configured)
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT t.key INTO bad_table
    FROM json_each(configured) t
   WHERE t.key = '' OR json_typeof(t.value) <> 'array'
      OR EXISTS (SELECT 1 FROM json_array_elements(t.value) c
                  WHERE json_typeof(c) <> 'object'
                     OR json_typeof(c -> 'name') IS DISTINCT FROM 'string' OR c ->> 'name' = ''
                     OR json_typeof(c -> 'type') IS DISTINCT FROM 'string'
                     OR json_typeof(c -> 'nullable') IS DISTINCT FROM 'boolean')
   LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'invalid argument: layouts[%] must be an array of {"name": text, "type": text, "nullable": boolean}', bad_table
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT t.key INTO bad_table FROM json_each(configured) t GROUP BY t.key HAVING count(*) > 1 LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'invalid argument: layouts name table % twice', to_json(bad_table)::text
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT t.key, c.value::jsonb INTO bad_table, bad_column
    FROM json_each(configured) t, json_array_elements(t.value) c
   WHERE NOT (c.value ->> 'type' = ANY (codec_types))
   LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'invalid argument: layouts[%] column % has type %, which is not a row-codec type (string, integer, float, boolean, json, bytes, blob_ref, crdt)',
      to_json(bad_table)::text, to_json(bad_column ->> 'name')::text, to_json(bad_column ->> 'type')::text
      USING ERRCODE = 'invalid_parameter_value';
  END IF;

  SELECT m.* INTO stored FROM sync_schema_meta m WHERE m.id = 1;
  IF NOT FOUND THEN
    RETURN 'absent';
  END IF;
  IF stored.schema_version > $1 THEN
    RAISE EXCEPTION 'stored schema version % is newer than the configured schema (%) — refusing to run an older server against a migrated database',
      stored.schema_version, $1
      USING ERRCODE = 'object_not_in_prerequisite_state';
  END IF;

  -- A stored marker that is not a JSON object (another writer's) disagrees
  -- with every configured schema at its version, and constrains no bump.
  BEGIN
    stored_layouts := coalesce(nullif(stored.layouts, ''), '{}')::jsonb;
  EXCEPTION WHEN invalid_text_representation THEN
    stored_layouts := NULL;
  END;
  IF jsonb_typeof(stored_layouts) IS DISTINCT FROM 'object' THEN
    IF stored.schema_version < $1 THEN
      RETURN 'older';
    END IF;
    mismatch := 'the stored layouts are not a JSON object';
  END IF;

  IF stored.schema_version < $1 THEN
    -- The bump: per stored table the configured schema keeps, its stored
    -- columns unchanged in place, then only nullable ones (upstream re-encodes
    -- each stored row by appending NULLs; nothing else has a value to give).
    FOR tbl, want IN SELECT t.key, t.value::jsonb FROM json_each(configured) t LOOP
      CONTINUE WHEN jsonb_typeof(stored_layouts -> tbl) IS DISTINCT FROM 'array';
      have := stored_layouts -> tbl;
      SELECT g.i INTO i
        FROM generate_series(0, least(jsonb_array_length(want), jsonb_array_length(have)) - 1) AS g(i)
       WHERE (want -> g.i ->> 'name', want -> g.i -> 'nullable') IS DISTINCT FROM (have -> g.i ->> 'name', have -> g.i -> 'nullable')
          OR NOT coalesce(have -> g.i ->> 'type' = want -> g.i ->> 'type'
                          OR concat_ws(' ', have -> g.i ->> 'type', want -> g.i ->> 'type') = ANY (legacy), false)
       ORDER BY g.i LIMIT 1;
      IF FOUND THEN
        RAISE EXCEPTION 'table %: column % changed (% → %) — only appending nullable columns is supported', to_json(tbl)::text, i,
          format('{"name":%s,"type":%s,"nullable":%s}', to_json(have -> i ->> 'name'), to_json(have -> i ->> 'type'), coalesce(have -> i ->> 'nullable', 'null')),
          format('{"name":%s,"type":%s,"nullable":%s}', to_json(want -> i ->> 'name'), to_json(want -> i ->> 'type'), want -> i ->> 'nullable')
          USING ERRCODE = 'object_not_in_prerequisite_state';
      END IF;
      IF jsonb_array_length(have) > jsonb_array_length(want) THEN
        RAISE EXCEPTION 'the schema removed columns — only appending nullable columns is supported; table % keeps % of its % stored columns',
          to_json(tbl)::text, jsonb_array_length(want), jsonb_array_length(have)
          USING ERRCODE = 'object_not_in_prerequisite_state';
      END IF;
      SELECT want -> g.i ->> 'name' INTO col
        FROM generate_series(jsonb_array_length(have), jsonb_array_length(want) - 1) AS g(i)
       WHERE want -> g.i -> 'nullable' = 'false'::jsonb
       ORDER BY g.i LIMIT 1;
      IF FOUND THEN
        RAISE EXCEPTION 'table %: added column % must be nullable — existing rows have no value to backfill', to_json(tbl)::text, to_json(col)::text
          USING ERRCODE = 'object_not_in_prerequisite_state';
      END IF;
    END LOOP;
    RETURN 'older';
  END IF;

  -- Same version: compare column by column.
  IF mismatch IS NULL THEN
    FOR tbl, want IN SELECT t.key, t.value::jsonb FROM json_each(configured) t LOOP
      have := CASE WHEN jsonb_typeof(stored_layouts -> tbl) = 'array' THEN stored_layouts -> tbl ELSE '[]'::jsonb END;
      SELECT coalesce(want -> g.i ->> 'name', have -> g.i ->> 'name', ''),
             CASE WHEN have -> g.i ->> 'type' IN ('numeric', 'uuid', 'date', 'timestamp', 'timestamptz') THEN have -> g.i ->> 'type' END
        INTO col, hint
        FROM generate_series(0, greatest(jsonb_array_length(want), jsonb_array_length(have)) - 1) AS g(i)
       WHERE want -> g.i IS NULL OR have -> g.i IS NULL
          OR (want -> g.i ->> 'name', want -> g.i -> 'nullable') IS DISTINCT FROM (have -> g.i ->> 'name', have -> g.i -> 'nullable')
          OR NOT coalesce(have -> g.i ->> 'type' = want -> g.i ->> 'type'
                          OR concat_ws(' ', have -> g.i ->> 'type', want -> g.i ->> 'type') = ANY (legacy), false)
       ORDER BY g.i LIMIT 1;
      IF FOUND THEN
        mismatch := format('table %s column %s', to_json(tbl)::text, to_json(col)::text);
        IF hint IS NOT NULL THEN
          -- The older gosync's Postgres type name says how the column is
          -- stored, not how upstream encodes it: only the operator knows.
          mismatch := mismatch || format(': the marker names the Postgres type %s, which has no row-codec type', to_json(hint)::text);
          hint := format('An older gosync wrote this marker. Declare the column with a row-codec type (string for %s values), '
                         'convert it (ALTER TABLE %I ALTER COLUMN %I TYPE text USING %I::text), then rewrite the marker as the owner of sync_schema_meta: '
                         'UPDATE sync_schema_meta SET layouts = <the configured layouts> WHERE id = 1', hint, tbl, col, col);
        END IF;
        EXIT;
      END IF;
      is_legacy := is_legacy OR EXISTS (SELECT 1 FROM generate_series(0, jsonb_array_length(want) - 1) AS g(i)
                                         WHERE have -> g.i ->> 'type' <> want -> g.i ->> 'type');
    END LOOP;
  END IF;
  IF mismatch IS NULL THEN
    SELECT format('table %s', to_json(t.key)::text) INTO mismatch
      FROM jsonb_each(stored_layouts) t
     WHERE NOT (configured::jsonb ? t.key)
     ORDER BY t.key COLLATE "C" LIMIT 1;
  END IF;
  IF mismatch IS NOT NULL THEN
    RAISE EXCEPTION 'stored schema layouts disagree with the configured schema at version % (%) — refusing to serve a database whose stored rows the running code cannot decode',
      $1, mismatch
      USING ERRCODE = 'object_not_in_prerequisite_state', HINT = coalesce(hint, '');
  END IF;
  RETURN CASE WHEN is_legacy THEN 'legacy' ELSE 'same' END;
END;
$$;
REVOKE ALL ON FUNCTION sync_check_schema_version(bigint,text) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_check_schema_version(bigint,text) TO sync_reader;
COMMENT ON FUNCTION sync_check_schema_version(bigint,text) IS 'The schema-marker rules in the row-codec vocabulary, read-only: absent, older (only nullable columns appended), same, or legacy (an older gosync''s Postgres type names the configured codec types explain) for a configured (schema_version, layouts); a newer stored version, differing layouts or a refused bump raise 55000 in the upstream server''s words.';
-- Example:
--   SELECT sync_check_schema_version(2, '{"todos":[{"name":"id","type":"string","nullable":false}]}');  -- absent
