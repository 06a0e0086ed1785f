-- Declare projections for every partition, now and later, in the
-- schema-bump transaction: record (name, schema_version) in the one row of
-- sync_all_partition_checkpoints (a name's version only goes up), then
-- install the checkpoints and fences in every existing partition with one
-- sync_install_checkpoints call. A partition created afterwards gets them
-- from sync_partition_created, its AFTER INSERT trigger. Returns how many
-- checkpoint rows were newly declared.
--
-- Why the migration lock and READ COMMITTED: under the lock no partition can
-- be created, so "every existing partition" and "every later one" meet with
-- nothing between them — but only if this transaction sees every partition
-- committed before the lock was granted. A REPEATABLE READ or SERIALIZABLE
-- snapshot is taken by the bump's first statement, before its wait, and
-- misses the partitions created during it: refused (25000) rather than
-- leave them unfenced.
--
-- Updating the row is also what fences a stale creator: the trigger reads
-- the row FOR SHARE, so a REPEATABLE READ or SERIALIZABLE transaction whose
-- snapshot predates this one fails with 40001 instead of creating a
-- partition under declarations it cannot see.
CREATE OR REPLACE FUNCTION sync_install_all_partitions(names text[], schema_version integer, now_ms bigint DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  bad text;
  stamp bigint := coalesce($3, sync_now_ms());
BEGIN
  IF $1 IS NULL THEN
    RAISE EXCEPTION 'invalid argument: names must be a non-NULL array'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM sync_assert_nonnegative('schema_version', $2, 1);
  SELECT d.n INTO bad FROM unnest($1) AS d(n) WHERE d.n IS NULL OR d.n = '' OR length(d.n) > 512 LIMIT 1;
  IF FOUND THEN
    PERFORM sync_assert_key('name', bad);
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_locks l
                  WHERE l.locktype = 'relation' AND l.relation = 'sync_partitions'::regclass
                    AND l.pid = pg_backend_pid() AND l.mode = 'ExclusiveLock' AND l.granted) THEN
    RAISE EXCEPTION 'sync_install_all_partitions must run after sync_begin_schema_change() in the same transaction'
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'Start the schema-bump transaction with SELECT sync_begin_schema_change();';
  END IF;
  IF current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION 'sync_install_all_partitions must run in a READ COMMITTED transaction, not %', current_setting('transaction_isolation')
      USING ERRCODE = 'invalid_transaction_state',
            DETAIL = 'A snapshot taken before the migration lock was granted misses the partitions created while the bump waited; they would stay unfenced.',
            HINT = 'Run the schema bump with BEGIN ISOLATION LEVEL READ COMMITTED.';
  END IF;
  IF cardinality($1) = 0 THEN
    RETURN 0;
  END IF;
  -- A partition row no function can name (adopted data, or stored before
  -- 00021 refused such names) would fail the install for every partition:
  -- name it, so the owner can deal with it.
  SELECT p.partition INTO bad FROM sync_partitions p
   WHERE p.partition = '' OR length(p.partition) > 512 LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'invalid argument: partition % (% characters) cannot be declared: names are non-empty and at most 512 characters',
      quote_literal(left(bad, 40) || CASE WHEN length(bad) > 40 THEN '...' ELSE '' END), length(bad)
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'As the owner, delete the partition row (and its log) or move its history to a valid name; then retry the bump.';
  END IF;

  INSERT INTO sync_all_partition_checkpoints AS a (id, names, schema_versions, updated_at_ms)
  SELECT 1, coalesce(array_agg(m.n ORDER BY m.n), '{}'), coalesce(array_agg(m.v ORDER BY m.n), '{}'), stamp
    FROM (SELECT u.n, max(u.v) AS v
            FROM (SELECT o.n, o.v FROM sync_all_partition_checkpoints s, unnest(s.names, s.schema_versions) AS o(n, v)
                   WHERE s.id = 1
                  UNION ALL
                  SELECT d.n, $2 FROM unnest($1) AS d(n)) u
           GROUP BY u.n) m
  ON CONFLICT (id) DO UPDATE
    SET names = EXCLUDED.names, schema_versions = EXCLUDED.schema_versions, updated_at_ms = EXCLUDED.updated_at_ms;

  RETURN sync_install_checkpoints(
    ARRAY(SELECT p.partition FROM sync_partitions p CROSS JOIN (SELECT DISTINCT d.n FROM unnest($1) AS d(n)) a
           ORDER BY a.n, p.partition),
    ARRAY(SELECT a.n FROM sync_partitions p CROSS JOIN (SELECT DISTINCT d.n FROM unnest($1) AS d(n)) a
           ORDER BY a.n, p.partition),
    $2, stamp);
END;
$$;
REVOKE ALL ON FUNCTION sync_install_all_partitions(text[],integer,bigint) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_install_all_partitions(text[],integer,bigint) TO sync_admin;
COMMENT ON FUNCTION sync_install_all_partitions(text[],integer,bigint) IS 'In a schema bump (READ COMMITTED, after sync_begin_schema_change): declare projections for every partition, now and later. Returns how many checkpoints were newly declared.';
-- Example:
--   BEGIN ISOLATION LEVEL READ COMMITTED;
--   SELECT sync_begin_schema_change();
--   SELECT sync_install_all_partitions(ARRAY['todos_by_owner'], 2);  -- checkpoints newly declared
--   COMMIT;
