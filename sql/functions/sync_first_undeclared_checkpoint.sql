-- "Not declared", once: the first pending checkpoint (of schema_version, not
-- activated: sync_pending_checkpoints) by (partition, name) that the caller
-- did not declare, or one row of NULLs when there is none. A pending
-- checkpoint is declared when its name is in declared_names (a projection
-- declared for every partition) or its (partition, name) pair is in
-- declared_partitions / declared_partition_names (parallel arrays). Fail
-- closed: nothing declared declares nothing. sync_serve_check calls it for
-- the checkpoints outside the requested partition; a server's start-up check
-- (gosync EnsureSchema, sync.storage.checkpoint_incomplete) calls it alone.
--
-- Preconditions (else 22023, nothing read): schema_version is not NULL and
-- not negative; the declarations pass sync_assert_declarations.
--
-- Index-driven, so it costs the same with 10 or 10^5 pending checkpoints: it
-- steps through the distinct pending names (sync_backfill_checkpoints_pending,
-- one index probe each) and for an undeclared name reads its first pending
-- partition not declared as a pair. Only rows declared by pair are ever
-- skipped, never rows declared by name. PL/pgSQL, not SQL: a parameterized
-- SQL function cannot read distributed tables on Citus.
CREATE OR REPLACE FUNCTION sync_first_undeclared_checkpoint(
  schema_version integer, declared_names text[] DEFAULT '{}', declared_partitions text[] DEFAULT '{}',
  declared_partition_names text[] DEFAULT '{}',
  OUT checkpoint_partition text, OUT checkpoint_name text)
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
#variable_conflict use_column
DECLARE
  p_version ALIAS FOR $1;
  pending_name text;
  found_partition text;
  more boolean;
BEGIN
  PERFORM sync_assert_nonnegative('schema_version', p_version);
  PERFORM sync_assert_declarations($2, $3, $4);
  -- The first name is read without a lower bound: a checkpoint named ''
  -- (adopted rows skip sync_assert_key) sorts first and must be seen.
  SELECT c.name INTO pending_name FROM sync_pending_checkpoints c
   WHERE c.schema_version = p_version
   ORDER BY c.name LIMIT 1;
  more := FOUND;
  WHILE more LOOP
    IF NOT pending_name = ANY ($2) THEN
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
    END IF;
    SELECT c.name INTO pending_name FROM sync_pending_checkpoints c
     WHERE c.schema_version = p_version AND c.name > pending_name
     ORDER BY c.name LIMIT 1;
    more := FOUND;
  END LOOP;
END;
$$;
REVOKE ALL ON FUNCTION sync_first_undeclared_checkpoint(integer,text[],text[],text[]) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_first_undeclared_checkpoint(integer,text[],text[],text[]) TO sync_reader;
COMMENT ON FUNCTION sync_first_undeclared_checkpoint(integer,text[],text[],text[]) IS 'The first pending checkpoint of schema_version, by (partition, name), that the declarations do not cover; one row of NULLs when none. Index-driven.';
-- Example:
--   SELECT * FROM sync_declare_checkpoint('p1', 'todos_by_owner', 2);
--   SELECT * FROM sync_first_undeclared_checkpoint(2);  -- p1 | todos_by_owner
--   SELECT * FROM sync_first_undeclared_checkpoint(2, ARRAY['todos_by_owner']);  -- NULL | NULL
