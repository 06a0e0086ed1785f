-- Write the schema marker inside a schema-bump transaction (after
-- sync_begin_schema_change(), which it requires, so no observer ever sees the
-- bumped marker without the fence installed in the same transaction). The
-- version never goes down; at the same version the layouts must match.
-- Versions are integers of 1 to 2^31-1 (what a checkpoint's schema_version
-- and a fence can hold: a larger marker could never be lowered or matched),
-- and layouts are a JSON object of table name to an array of columns
-- {"name": text, "type": text, "nullable": boolean}, checked here so a bad
-- marker is refused at the bump, not found later by a reader.
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
