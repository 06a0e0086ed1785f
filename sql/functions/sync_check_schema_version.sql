-- The schema-marker rules, once: how the stored marker relates to a
-- configured schema (schema_version, layouts). Returns 'absent' (no marker),
-- 'older' (the stored version is lower: a bump may write this one) or 'same'
-- (same version, same layouts); raises object_not_in_prerequisite_state
-- (55000), with the upstream server's words, when
--   * the stored version is newer: "stored schema version S is newer than the
--     configured schema (C) — refusing to run an older server against a
--     migrated database" (the marker never goes down);
--   * the version is the same and the layouts differ: "stored schema layouts
--     disagree with the configured schema at version V (M) — refusing to
--     serve a database whose stored rows the running code cannot decode",
--     where M is table "t" column "c" for the first column (by position)
--     that differs in name, type or nullability in the first configured
--     table (by name, byte order) that differs, or table "t" for the first
--     stored table the configured schema lacks.
-- A server's start-up check (gosync EnsureSchema) and the bump
-- (sync_set_schema_version) both call it, so they refuse alike.
--
-- Preconditions (else 22023, nothing read): schema_version is 1 to 2^31-1
-- (what a checkpoint's schema_version and a fence can hold: a larger marker
-- could never be lowered or matched); layouts is a JSON object of table name
-- to an array of columns {"name": text, "type": text, "nullable": boolean},
-- names non-empty. It only reads.
CREATE OR REPLACE FUNCTION sync_check_schema_version(schema_version bigint, layouts text DEFAULT '{}')
RETURNS text
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, @extschema@, pg_temp
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
REVOKE ALL ON FUNCTION sync_check_schema_version(bigint,text) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_check_schema_version(bigint,text) TO sync_reader;
COMMENT ON FUNCTION sync_check_schema_version(bigint,text) IS 'The schema-marker rules, read-only: absent, older or same for a configured (schema_version, layouts); a newer stored version or differing layouts raise 55000 in the upstream server''s words.';
-- Example:
--   SELECT sync_check_schema_version(2, '{"todos": [{"name": "id", "type": "text", "nullable": false}]}');  -- absent
