-- The refusal rule, once: the serve gate of one request, answered in one
-- row. refusal is NULL when the gate is open, else the first that applies:
--   'schema'     the stored schema version is not running_schema_version;
--   'epoch'      expected_log_epoch is given (not NULL) and the partition's
--                log epoch differs (an unregistered partition differs);
--   'checkpoint' a checkpoint of the running version that is not activated:
--                in the requested partition (the lowest name) always, else
--                the first one elsewhere, by (partition, name), that the
--                caller did not declare.
-- Pending is sync_pending_checkpoints (not activated) at the running
-- version; "not declared" is sync_first_undeclared_checkpoint (by name for
-- every partition, or by (partition, name) pair; nothing declared declares
-- nothing). Bad arguments (sync_assert_key, sync_assert_nonnegative,
-- sync_assert_declarations) are refused with 22023 before any step, whatever
-- the refusal would have been.
--
-- Index-driven, so it costs the same with 10 or 10^5 pending checkpoints:
-- the requested partition is one primary-key range; elsewhere is
-- sync_first_undeclared_checkpoint's walk of the pending index. PL/pgSQL,
-- not SQL: a parameterized SQL function cannot read distributed tables on
-- Citus.
CREATE OR REPLACE FUNCTION sync_serve_check(
  partition text, running_schema_version integer, expected_log_epoch text DEFAULT NULL,
  declared_names text[] DEFAULT '{}', declared_partitions text[] DEFAULT '{}',
  declared_partition_names text[] DEFAULT '{}',
  OUT refusal text, OUT stored_schema_version bigint, OUT log_epoch text,
  OUT checkpoint_partition text, OUT checkpoint_name text)
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, @extschema@, pg_temp
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
REVOKE ALL ON FUNCTION sync_serve_check(text,integer,text,text[],text[],text[]) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_serve_check(text,integer,text,text[],text[],text[]) TO sync_reader;
COMMENT ON FUNCTION sync_serve_check(text,integer,text,text[],text[],text[]) IS 'The refusal rule of one request, in one row: refusal NULL (serve), schema, epoch or checkpoint, the first that applies. Index-driven: same cost whatever is pending.';
-- Example:
--   SELECT * FROM sync_serve_check('p1', 2, NULL, ARRAY['todos_by_owner']);
--   -- refusal schema: the stored version (0) is not the running one (2)
