-- Install declarations and raise their fences, set-based, in the caller's
-- transaction: the one body that raises a fence (sync_install_checkpoint is
-- this for one pair). A schema bump declaring a projection in 10^5
-- partitions holds the migration lock for a few statements, not 10^5 round
-- trips. partitions[i] and names[i] are one declaration. Never re-declares
-- an existing row, never lowers a fence; every argument is checked before
-- anything is written. Returns how many rows were newly declared.
--
-- Each affected partition's sync_partitions row is written too (a no-op
-- update, or the row inserted): a writer whose REPEATABLE READ snapshot
-- predates the new fence then fails to serialize on its allocation instead
-- of appending under the old fence.
--
-- A new row's owner_epoch starts at sync_checkpoint_epoch_floor (0 until a
-- checkpoint was removed), so even a claim that only adds 1 (the upstream
-- server's) never reuses a removed row's epoch. A ROW EXCLUSIVE lock on
-- sync_schema_meta (which a bump holds anyway) is taken before the floor is
-- read: a concurrent sync_remove_checkpoint has then either raised it and
-- committed, or not yet deleted its row (which this install then does not
-- re-declare).
CREATE OR REPLACE FUNCTION sync_install_checkpoints(
  partitions text[], names text[], schema_version integer, now_ms bigint DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  installed integer;
  bad record;
  stamp bigint;
  floor_epoch bigint;
BEGIN
  IF $1 IS NULL OR $2 IS NULL OR cardinality($1) <> cardinality($2) THEN
    RAISE EXCEPTION 'invalid argument: partitions and names must be non-NULL arrays of the same length'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM sync_assert_nonnegative('schema_version', $3, 1);
  stamp := sync_assert_now_ms('now_ms', $4);
  -- One pass finds the first bad element; sync_assert_key raises its message.
  SELECT d.p, d.n INTO bad FROM unnest($1, $2) AS d(p, n)
   WHERE d.p IS NULL OR d.p = '' OR length(d.p) > 512 OR d.n IS NULL OR d.n = '' OR length(d.n) > 512
   LIMIT 1;
  IF FOUND THEN
    PERFORM sync_assert_key('partition', bad.p);
    PERFORM sync_assert_key('name', bad.n);
  END IF;
  LOCK TABLE sync_schema_meta IN ROW EXCLUSIVE MODE;
  SELECT s.last_value INTO floor_epoch FROM sync_checkpoint_epoch_floor s;

  INSERT INTO sync_backfill_checkpoints AS c (
    partition, name, schema_version, state, watermark, owner_epoch, observed_rows, updated_at_ms)
  SELECT d.p, d.n, $3, 'declared', 0, floor_epoch, 0, stamp
    FROM unnest($1, $2) AS d(p, n)
  ON CONFLICT (partition, name) DO NOTHING;
  GET DIAGNOSTICS installed = ROW_COUNT;

  INSERT INTO sync_writer_fence AS f (partition, required_writer_version)
  SELECT DISTINCT d.p, $3 FROM unnest($1) AS d(p)
  ON CONFLICT (partition) DO UPDATE
    SET required_writer_version = EXCLUDED.required_writer_version
    WHERE f.required_writer_version < EXCLUDED.required_writer_version;
  INSERT INTO sync_partitions AS p (partition)
  SELECT DISTINCT d.p FROM unnest($1) AS d(p)
  ON CONFLICT (partition) DO UPDATE SET max_commit_seq = p.max_commit_seq;
  RETURN installed;
END;
$$;
REVOKE ALL ON FUNCTION sync_install_checkpoints(text[],text[],integer,bigint) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_install_checkpoints(text[],text[],integer,bigint) TO sync_admin;
COMMENT ON FUNCTION sync_install_checkpoints(text[],text[],integer,bigint) IS 'Install many declarations (partitions[i], names[i]) and raise their fences, set-based, in the caller''s transaction. Returns how many rows were newly declared.';
-- Example:
--   SELECT sync_install_checkpoints(ARRAY['p1', 'p2'], ARRAY['todos_by_owner', 'todos_by_owner'], 2);  -- 2
