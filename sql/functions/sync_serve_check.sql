-- The refusal rule, once: the serve gate of one request, answered in one
-- row. refusal is NULL when the gate is open, else the first that applies:
--   'schema'     the stored schema version is not running_schema_version;
--   'epoch'      expected_log_epoch is given (not NULL) and the partition's
--                log epoch differs (an unregistered partition differs);
--   'checkpoint' a checkpoint of the running version that is not activated:
--                in the requested partition (the lowest name) always, else
--                the first one elsewhere, by (partition, name), that the
--                caller did not declare.
-- A pending checkpoint is declared when its name is in declared_names (a
-- projection declared for every partition) or its (partition, name) pair is
-- in declared_partitions / declared_partition_names (parallel arrays). Fail
-- closed: nothing declared declares nothing.
--
-- Index-driven, so it costs the same with 10 or 10^5 pending checkpoints:
-- the requested partition is one primary-key range; elsewhere, it steps
-- through the distinct pending names (sync_backfill_checkpoints_pending,
-- one index probe each) and for an undeclared name reads its first pending
-- partition not declared as a pair. Only rows declared by pair are ever
-- skipped, never rows declared by name. PL/pgSQL, not SQL: a parameterized
-- SQL function cannot read distributed tables on Citus.
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
