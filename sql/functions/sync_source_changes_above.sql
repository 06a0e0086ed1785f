-- Coverage check: does the log prove that no source table changed above seq?
-- `changed` when a change exists above seq; `unverifiable` when none does
-- but the log is pruned past seq (horizon_seq > seq), so an empty scan proves
-- nothing; `clean` otherwise. The horizon is read before the scan.
--
-- The scan is an ORDER BY commit_seq LIMIT 1 probe, which keeps even the
-- cached generic plan on an index range scan of (partition, commit_seq > seq):
-- its cost follows the changes above the watermark. An EXISTS drops the
-- ORDER BY/LIMIT and gets a sequential scan that reads the whole log exactly
-- when the answer is `clean` (tests/coverage_plan_test.go watches this).
CREATE OR REPLACE FUNCTION sync_source_changes_above(partition text, sources text[], seq bigint)
RETURNS text
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  horizon bigint;
  hit bigint;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_sources($2);
  PERFORM sync_assert_nonnegative('seq', $3);
  SELECT p.horizon_seq INTO horizon FROM sync_partitions p WHERE p.partition = $1;
  IF cardinality($2) = 0 THEN
    RETURN 'clean';
  END IF;
  SELECT ch.commit_seq INTO hit
    FROM sync_changes ch
   WHERE ch.partition = $1 AND ch.commit_seq > $3 AND ch.tbl || '' = ANY ($2)
   ORDER BY ch.commit_seq
   LIMIT 1;
  IF FOUND THEN
    RETURN 'changed';
  END IF;
  IF coalesce(horizon, 0) > $3 THEN
    RETURN 'unverifiable';
  END IF;
  RETURN 'clean';
END;
$$;
REVOKE ALL ON FUNCTION sync_source_changes_above(text,text[],bigint) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_source_changes_above(text,text[],bigint) TO sync_reader;
COMMENT ON FUNCTION sync_source_changes_above(text,text[],bigint) IS 'Coverage check: changed (a source change above seq), unverifiable (none, but the log is pruned past seq) or clean.';
-- Example:
--   SELECT sync_source_changes_above('p1', ARRAY['todos'], 0);  -- clean
