-- Issue 17, sections 4, 5 (first bullet) and 7: time, epochs, sources, the
-- prune race, leases, the '' checkpoint.
--
-- * every now_ms argument is bounded to 5 minutes around the database clock
--   (sync_assert_now_ms) and leases are measured on the database clock, the
--   lease itself 1 second to 1 day; sync_barrier_status clamps a stored
--   stamp to years 1970..9999, so adopted out-of-range stamps cannot make
--   the status views fail for everyone;
-- * owner epochs are never reused for a (partition, name): removals raise
--   sync_checkpoint_epoch_floor, declares and claims start above it;
-- * activation refuses an empty source list or a table the stored schema
--   does not have (sync_assert_source_tables);
-- * an advance refuses to move the watermark over history pruned above its
--   range's start (sync.storage.log_pruned): a prune that commits between a
--   batch's horizon check and its read;
-- * sync_first_undeclared_checkpoint sees a checkpoint named ''.
--
-- Function bodies are verbatim copies of sql/functions/*.sql; the Down
-- restores 00015's (the bodies before this migration), the view of 00011
-- and drops what this one adds.

-- +goose Up
CREATE SEQUENCE sync_checkpoint_epoch_floor AS bigint MINVALUE 0 START 0 NO CYCLE;
REVOKE ALL ON SEQUENCE sync_checkpoint_epoch_floor FROM PUBLIC;
GRANT SELECT ON SEQUENCE sync_checkpoint_epoch_floor TO sync_reader;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_assert_now_ms(label text, value bigint)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
AS $$
DECLARE
  db_now bigint := sync_now_ms();
BEGIN
  IF value IS NULL THEN
    RETURN db_now;
  END IF;
  IF value < db_now - 300000 OR value > db_now + 300000 THEN
    RAISE EXCEPTION 'invalid argument: % % is more than 300000 ms (5 minutes) from the database clock %', label, value, db_now
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  RETURN value;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_assert_source_tables(sources text[])
RETURNS boolean
LANGUAGE plpgsql
STABLE
AS $$
DECLARE
  stored text;
  layouts jsonb;
  known text[] := '{}';
  unknown text;
BEGIN
  PERFORM sync_assert_sources($1);
  SELECT m.layouts INTO stored FROM sync_schema_meta m WHERE m.id = 1;
  BEGIN
    layouts := coalesce(nullif(stored, ''), '{}')::jsonb;
  EXCEPTION WHEN invalid_text_representation THEN
    layouts := '{}'; -- an unreadable marker knows no tables
  END;
  IF jsonb_typeof(layouts) = 'object' THEN
    SELECT coalesce(array_agg(k ORDER BY k), '{}') INTO known FROM jsonb_object_keys(layouts) k;
  END IF;
  IF cardinality($1) = 0 THEN
    RAISE EXCEPTION 'invalid argument: sources must name at least one table of the stored schema (known tables: %)',
      coalesce(nullif(array_to_string(known, ', '), ''), 'none')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT s INTO unknown FROM unnest($1) s WHERE s <> ALL (known) LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'invalid argument: sources must name tables of the stored schema; % is not one (known tables: %)',
      format('%L', unknown), coalesce(nullif(array_to_string(known, ', '), ''), 'none')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  RETURN true;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_claim_checkpoint(
  partition text, name text, schema_version integer, now_ms bigint DEFAULT NULL)
RETURNS SETOF sync_backfill_checkpoints
LANGUAGE plpgsql
ROWS 1
AS $$
#variable_conflict use_column
DECLARE
  claimed sync_backfill_checkpoints;
  declared_version integer;
  stamp bigint;
  floor_epoch bigint;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('name', $2);
  PERFORM sync_assert_nonnegative('schema_version', $3, 1);
  stamp := sync_assert_now_ms('now_ms', $4);
  SELECT s.last_value INTO floor_epoch FROM sync_checkpoint_epoch_floor s;
  UPDATE sync_backfill_checkpoints c
     SET owner_epoch = GREATEST(c.owner_epoch, floor_epoch) + 1,
         state = 'backfilling',
         updated_at_ms = stamp
   WHERE c.partition = $1 AND c.name = $2 AND c.state <> 'activated' AND c.schema_version = $3
  RETURNING c.* INTO claimed;
  IF NOT FOUND THEN
    SELECT c.schema_version INTO declared_version
      FROM sync_backfill_checkpoints c
     WHERE c.partition = $1 AND c.name = $2 AND c.state <> 'activated';
    IF FOUND THEN
      RAISE EXCEPTION 'sync.storage.checkpoint_not_declared'
        USING DETAIL = format('checkpoint %L in partition %L is declared at schema version %s, not %s',
                              $2, $1, declared_version, $3);
    END IF;
    RAISE EXCEPTION 'sync.storage.checkpoint_not_declared'
      USING DETAIL = format('no claimable checkpoint %L in partition %L (missing or already activated)', $2, $1);
  END IF;
  RETURN NEXT claimed;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_claim_next_checkpoint(
  name text, schema_version integer, lease_ms bigint, now_ms bigint DEFAULT NULL)
RETURNS SETOF sync_backfill_checkpoints
LANGUAGE plpgsql
ROWS 1
AS $$
#variable_conflict use_column
DECLARE
  p_name ALIAS FOR $1;
  p_version ALIAS FOR $2;
  stamp bigint;
  db_now bigint := sync_now_ms();
  candidate text;
BEGIN
  PERFORM sync_assert_key('name', p_name);
  PERFORM sync_assert_nonnegative('schema_version', p_version, 1);
  IF $3 IS NULL OR $3 < 1000 OR $3 > 86400000 THEN
    RAISE EXCEPTION 'invalid argument: lease_ms must be between 1000 (1 second) and 86400000 (1 day), got %', coalesce($3::text, 'NULL')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  stamp := sync_assert_now_ms('now_ms', $4);
  FOR candidate IN
    SELECT c.partition FROM sync_backfill_checkpoints c
     WHERE c.schema_version = p_version AND c.name = p_name AND c.state <> 'activated'
       AND (c.state = 'declared' OR c.updated_at_ms <= db_now - $3 OR c.updated_at_ms > db_now + 300000)
     ORDER BY c.partition
  LOOP
    -- Re-checked on the row's latest version once locked: a concurrent
    -- claim that committed meanwhile makes it fail.
    PERFORM 1 FROM sync_backfill_checkpoints c
     WHERE c.partition = candidate AND c.name = p_name AND c.schema_version = p_version
       AND c.state <> 'activated'
       AND (c.state = 'declared' OR c.updated_at_ms <= db_now - $3 OR c.updated_at_ms > db_now + 300000)
       FOR UPDATE SKIP LOCKED;
    IF FOUND THEN
      RETURN QUERY SELECT * FROM sync_claim_checkpoint(candidate, p_name, p_version, stamp);
      RETURN;
    END IF;
  END LOOP;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_advance_checkpoint(
  partition text, name text, owner_epoch bigint, watermark bigint,
  observed_rows bigint, now_ms bigint DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  current sync_backfill_checkpoints;
  head bigint;
  horizon bigint;
  stamp bigint;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('name', $2);
  PERFORM sync_assert_nonnegative('owner_epoch', $3);
  PERFORM sync_assert_nonnegative('watermark', $4);
  PERFORM sync_assert_nonnegative('observed_rows', $5);
  stamp := sync_assert_now_ms('now_ms', $6);
  -- The row lock makes the epoch, state and watermark checks and the write
  -- one step against a concurrent claim.
  SELECT c.* INTO current FROM sync_backfill_checkpoints c
   WHERE c.partition = $1 AND c.name = $2 FOR UPDATE;
  IF NOT FOUND OR current.state <> 'backfilling' OR current.owner_epoch <> $3 THEN
    RETURN false;
  END IF;
  IF $4 < current.watermark THEN
    RAISE EXCEPTION 'invalid argument: watermark % is below the stored watermark %; it never goes down', $4, current.watermark
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT p.max_commit_seq, p.horizon_seq INTO head, horizon FROM sync_partitions p WHERE p.partition = $1;
  IF $4 > coalesce(head, 0) THEN
    RAISE EXCEPTION 'invalid argument: watermark % is above the partition''s last commit %', $4, coalesce(head, 0)
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF $4 > current.watermark AND coalesce(horizon, 0) > current.watermark
     AND (current_setting('transaction_isolation') = 'read committed' OR $4 <> head) THEN
    RAISE EXCEPTION 'sync.storage.log_pruned'
      USING DETAIL = format('partition %L is pruned through %s, above the stored watermark %s of checkpoint %L: the changes in (%s, %s] are gone, so the batch cannot have read them (fill from current rows in one REPEATABLE READ snapshot, up to its head)',
                            $1, horizon, current.watermark, $2, current.watermark, horizon);
  END IF;
  UPDATE sync_backfill_checkpoints c
     SET watermark = $4, observed_rows = $5, updated_at_ms = stamp
   WHERE c.partition = $1 AND c.name = $2;
  RETURN true;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_activate_checkpoint(
  partition text, name text, owner_epoch bigint, watermark bigint,
  sources text[], now_ms bigint DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  required integer;
  current sync_backfill_checkpoints;
  coverage text;
  stamp bigint;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('name', $2);
  PERFORM sync_assert_nonnegative('owner_epoch', $3);
  PERFORM sync_assert_nonnegative('watermark', $4);
  PERFORM sync_assert_source_tables($5);
  stamp := sync_assert_now_ms('now_ms', $6);
  PERFORM sync_lock_partition($1);
  SELECT c.* INTO current
    FROM sync_backfill_checkpoints c WHERE c.partition = $1 AND c.name = $2 FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'sync.storage.checkpoint_not_declared'
      USING DETAIL = format('no checkpoint %L in partition %L', $2, $1);
  END IF;
  SELECT f.required_writer_version INTO required
    FROM sync_writer_fence f WHERE f.partition = $1;
  IF required IS NULL OR required < current.schema_version THEN
    RAISE EXCEPTION 'sync.storage.checkpoint_fence_missing'
      USING DETAIL = format('partition %L: checkpoint %L needs a writer fence >= %s, found %s',
                            $1, $2, current.schema_version, coalesce(required::text, 'none'));
  END IF;
  IF current.state <> 'backfilling' OR current.owner_epoch <> $3 OR current.watermark <> $4 THEN
    RETURN 'stale';
  END IF;
  coverage := sync_source_changes_above($1, $5, $4);
  IF coverage <> 'clean' THEN
    RETURN CASE coverage WHEN 'changed' THEN 'stale' ELSE 'unverifiable' END;
  END IF;
  UPDATE sync_backfill_checkpoints c
     SET state = 'activated', updated_at_ms = stamp
   WHERE c.partition = $1 AND c.name = $2;
  PERFORM pg_notify('sync_checkpoint_activated', jsonb_build_object('partition', $1, 'name', $2)::text);
  RETURN 'activated';
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_remove_checkpoint(partition text, name text)
RETURNS SETOF sync_backfill_checkpoints
LANGUAGE plpgsql
ROWS 1
AS $$
#variable_conflict use_column
DECLARE
  removed sync_backfill_checkpoints;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('name', $2);
  LOCK TABLE sync_schema_meta IN SHARE ROW EXCLUSIVE MODE;
  DELETE FROM sync_backfill_checkpoints c
   WHERE c.partition = $1 AND c.name = $2 AND c.state <> 'activated'
  RETURNING c.* INTO removed;
  IF NOT FOUND THEN
    IF EXISTS (SELECT FROM sync_backfill_checkpoints c WHERE c.partition = $1 AND c.name = $2) THEN
      RAISE EXCEPTION 'sync.storage.checkpoint_activated'
        USING DETAIL = format('checkpoint %L in partition %L is activated: it cannot be removed', $2, $1);
    END IF;
    RAISE EXCEPTION 'sync.storage.checkpoint_not_declared'
      USING DETAIL = format('no checkpoint %L in partition %L', $2, $1);
  END IF;
  IF removed.owner_epoch > (SELECT s.last_value FROM sync_checkpoint_epoch_floor s) THEN
    PERFORM setval('sync_checkpoint_epoch_floor', removed.owner_epoch);
  END IF;
  RETURN NEXT removed;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_install_checkpoints(
  partitions text[], names text[], schema_version integer, now_ms bigint DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql
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
-- +goose StatementEnd

-- CREATE OR REPLACE resets SET and SECURITY DEFINER: restore what 00006,
-- 00012, 00013 and 00014 gave them (grants survive a replace).
-- +goose StatementBegin
DO $$
BEGIN
  EXECUTE format('ALTER FUNCTION sync_assert_now_ms(text, bigint) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  EXECUTE format('ALTER FUNCTION sync_assert_source_tables(text[]) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  EXECUTE format('ALTER FUNCTION sync_claim_checkpoint(text, text, integer, bigint) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  ALTER FUNCTION sync_claim_checkpoint(text, text, integer, bigint) SECURITY DEFINER;
  EXECUTE format('ALTER FUNCTION sync_claim_next_checkpoint(text, integer, bigint, bigint) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  ALTER FUNCTION sync_claim_next_checkpoint(text, integer, bigint, bigint) SECURITY DEFINER;
  EXECUTE format('ALTER FUNCTION sync_advance_checkpoint(text, text, bigint, bigint, bigint, bigint) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  ALTER FUNCTION sync_advance_checkpoint(text, text, bigint, bigint, bigint, bigint) SECURITY DEFINER;
  EXECUTE format('ALTER FUNCTION sync_activate_checkpoint(text, text, bigint, bigint, text[], bigint) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  ALTER FUNCTION sync_activate_checkpoint(text, text, bigint, bigint, text[], bigint) SECURITY DEFINER;
  EXECUTE format('ALTER FUNCTION sync_remove_checkpoint(text, text) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  ALTER FUNCTION sync_remove_checkpoint(text, text) SECURITY DEFINER;
  EXECUTE format('ALTER FUNCTION sync_install_checkpoints(text[], text[], integer, bigint) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  ALTER FUNCTION sync_install_checkpoints(text[], text[], integer, bigint) SECURITY DEFINER;
  EXECUTE format('ALTER FUNCTION sync_first_undeclared_checkpoint(integer, text[], text[], text[]) SET search_path = pg_catalog, %I, pg_temp', current_schema());
END;
$$;
-- +goose StatementEnd

REVOKE EXECUTE ON FUNCTION sync_assert_now_ms(text, bigint), sync_assert_source_tables(text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sync_assert_now_ms(text, bigint), sync_assert_source_tables(text[]) TO sync_reader;

-- A stamp outside what a timestamp holds (adopted data) no longer fails the
-- view, and with it sync_barrier_summary and `gosync status`, for everyone.
CREATE OR REPLACE VIEW sync_barrier_status AS
SELECT c.partition,
       c.name AS checkpoint,
       c.state,
       c.schema_version,
       f.required_writer_version AS fence_version,
       c.owner_epoch,
       c.watermark,
       coalesce(p.max_commit_seq, 0) AS coverage_seq,
       CASE WHEN c.state = 'activated' THEN 0
            ELSE GREATEST(coalesce(p.max_commit_seq, 0) - c.watermark, 0) END::bigint AS lag,
       coalesce(p.horizon_seq, 0)::bigint AS horizon_seq,
       c.observed_rows,
       to_timestamp(LEAST(GREATEST(c.updated_at_ms, 0), 253402300799999) / 1000.0)::timestamptz AS updated_at
  FROM sync_backfill_checkpoints c
  LEFT JOIN sync_writer_fence f ON f.partition = c.partition
  LEFT JOIN sync_partitions p ON p.partition = c.partition;

-- +goose Down
CREATE OR REPLACE VIEW sync_barrier_status AS
SELECT c.partition,
       c.name AS checkpoint,
       c.state,
       c.schema_version,
       f.required_writer_version AS fence_version,
       c.owner_epoch,
       c.watermark,
       coalesce(p.max_commit_seq, 0) AS coverage_seq,
       CASE WHEN c.state = 'activated' THEN 0
            ELSE GREATEST(coalesce(p.max_commit_seq, 0) - c.watermark, 0) END::bigint AS lag,
       coalesce(p.horizon_seq, 0)::bigint AS horizon_seq,
       c.observed_rows,
       to_timestamp(c.updated_at_ms / 1000.0)::timestamptz AS updated_at
  FROM sync_backfill_checkpoints c
  LEFT JOIN sync_writer_fence f ON f.partition = c.partition
  LEFT JOIN sync_partitions p ON p.partition = c.partition;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_claim_checkpoint(
  partition text, name text, schema_version integer, now_ms bigint DEFAULT NULL)
RETURNS SETOF sync_backfill_checkpoints
LANGUAGE plpgsql
ROWS 1
AS $$
#variable_conflict use_column
DECLARE
  claimed sync_backfill_checkpoints;
  declared_version integer;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('name', $2);
  PERFORM sync_assert_nonnegative('schema_version', $3, 1);
  UPDATE sync_backfill_checkpoints c
     SET owner_epoch = c.owner_epoch + 1,
         state = 'backfilling',
         updated_at_ms = coalesce($4, sync_now_ms())
   WHERE c.partition = $1 AND c.name = $2 AND c.state <> 'activated' AND c.schema_version = $3
  RETURNING c.* INTO claimed;
  IF NOT FOUND THEN
    SELECT c.schema_version INTO declared_version
      FROM sync_backfill_checkpoints c
     WHERE c.partition = $1 AND c.name = $2 AND c.state <> 'activated';
    IF FOUND THEN
      RAISE EXCEPTION 'sync.storage.checkpoint_not_declared'
        USING DETAIL = format('checkpoint %L in partition %L is declared at schema version %s, not %s',
                              $2, $1, declared_version, $3);
    END IF;
    RAISE EXCEPTION 'sync.storage.checkpoint_not_declared'
      USING DETAIL = format('no claimable checkpoint %L in partition %L (missing or already activated)', $2, $1);
  END IF;
  RETURN NEXT claimed;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_claim_next_checkpoint(
  name text, schema_version integer, lease_ms bigint, now_ms bigint DEFAULT NULL)
RETURNS SETOF sync_backfill_checkpoints
LANGUAGE plpgsql
ROWS 1
AS $$
#variable_conflict use_column
DECLARE
  p_name ALIAS FOR $1;
  p_version ALIAS FOR $2;
  stamp bigint := coalesce($4, sync_now_ms());
  candidate text;
BEGIN
  PERFORM sync_assert_key('name', p_name);
  PERFORM sync_assert_nonnegative('schema_version', p_version, 1);
  PERFORM sync_assert_nonnegative('lease_ms', $3);
  FOR candidate IN
    SELECT c.partition FROM sync_backfill_checkpoints c
     WHERE c.schema_version = p_version AND c.name = p_name AND c.state <> 'activated'
       AND (c.state = 'declared' OR c.updated_at_ms <= stamp - $3)
     ORDER BY c.partition
  LOOP
    -- Re-checked on the row's latest version once locked: a concurrent
    -- claim that committed meanwhile makes it fail.
    PERFORM 1 FROM sync_backfill_checkpoints c
     WHERE c.partition = candidate AND c.name = p_name AND c.schema_version = p_version
       AND c.state <> 'activated' AND (c.state = 'declared' OR c.updated_at_ms <= stamp - $3)
       FOR UPDATE SKIP LOCKED;
    IF FOUND THEN
      RETURN QUERY SELECT * FROM sync_claim_checkpoint(candidate, p_name, p_version, stamp);
      RETURN;
    END IF;
  END LOOP;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_advance_checkpoint(
  partition text, name text, owner_epoch bigint, watermark bigint,
  observed_rows bigint, now_ms bigint DEFAULT NULL)
RETURNS boolean
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  current sync_backfill_checkpoints;
  head bigint;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('name', $2);
  PERFORM sync_assert_nonnegative('owner_epoch', $3);
  PERFORM sync_assert_nonnegative('watermark', $4);
  PERFORM sync_assert_nonnegative('observed_rows', $5);
  -- The row lock makes the epoch, state and watermark checks and the write
  -- one step against a concurrent claim.
  SELECT c.* INTO current FROM sync_backfill_checkpoints c
   WHERE c.partition = $1 AND c.name = $2 FOR UPDATE;
  IF NOT FOUND OR current.state <> 'backfilling' OR current.owner_epoch <> $3 THEN
    RETURN false;
  END IF;
  IF $4 < current.watermark THEN
    RAISE EXCEPTION 'invalid argument: watermark % is below the stored watermark %; it never goes down', $4, current.watermark
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  SELECT p.max_commit_seq INTO head FROM sync_partitions p WHERE p.partition = $1;
  IF $4 > coalesce(head, 0) THEN
    RAISE EXCEPTION 'invalid argument: watermark % is above the partition''s last commit %', $4, coalesce(head, 0)
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  UPDATE sync_backfill_checkpoints c
     SET watermark = $4, observed_rows = $5, updated_at_ms = coalesce($6, sync_now_ms())
   WHERE c.partition = $1 AND c.name = $2;
  RETURN true;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_activate_checkpoint(
  partition text, name text, owner_epoch bigint, watermark bigint,
  sources text[], now_ms bigint DEFAULT NULL)
RETURNS text
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  required integer;
  current sync_backfill_checkpoints;
  coverage text;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('name', $2);
  PERFORM sync_assert_nonnegative('owner_epoch', $3);
  PERFORM sync_assert_nonnegative('watermark', $4);
  PERFORM sync_assert_sources($5);
  PERFORM sync_lock_partition($1);
  SELECT c.* INTO current
    FROM sync_backfill_checkpoints c WHERE c.partition = $1 AND c.name = $2 FOR UPDATE;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'sync.storage.checkpoint_not_declared'
      USING DETAIL = format('no checkpoint %L in partition %L', $2, $1);
  END IF;
  SELECT f.required_writer_version INTO required
    FROM sync_writer_fence f WHERE f.partition = $1;
  IF required IS NULL OR required < current.schema_version THEN
    RAISE EXCEPTION 'sync.storage.checkpoint_fence_missing'
      USING DETAIL = format('partition %L: checkpoint %L needs a writer fence >= %s, found %s',
                            $1, $2, current.schema_version, coalesce(required::text, 'none'));
  END IF;
  IF current.state <> 'backfilling' OR current.owner_epoch <> $3 OR current.watermark <> $4 THEN
    RETURN 'stale';
  END IF;
  coverage := sync_source_changes_above($1, $5, $4);
  IF coverage <> 'clean' THEN
    RETURN CASE coverage WHEN 'changed' THEN 'stale' ELSE 'unverifiable' END;
  END IF;
  UPDATE sync_backfill_checkpoints c
     SET state = 'activated', updated_at_ms = coalesce($6, sync_now_ms())
   WHERE c.partition = $1 AND c.name = $2;
  PERFORM pg_notify('sync_checkpoint_activated', jsonb_build_object('partition', $1, 'name', $2)::text);
  RETURN 'activated';
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_remove_checkpoint(partition text, name text)
RETURNS SETOF sync_backfill_checkpoints
LANGUAGE plpgsql
ROWS 1
AS $$
#variable_conflict use_column
DECLARE
  removed sync_backfill_checkpoints;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('name', $2);
  DELETE FROM sync_backfill_checkpoints c
   WHERE c.partition = $1 AND c.name = $2 AND c.state <> 'activated'
  RETURNING c.* INTO removed;
  IF NOT FOUND THEN
    IF EXISTS (SELECT FROM sync_backfill_checkpoints c WHERE c.partition = $1 AND c.name = $2) THEN
      RAISE EXCEPTION 'sync.storage.checkpoint_activated'
        USING DETAIL = format('checkpoint %L in partition %L is activated: it cannot be removed', $2, $1);
    END IF;
    RAISE EXCEPTION 'sync.storage.checkpoint_not_declared'
      USING DETAIL = format('no checkpoint %L in partition %L', $2, $1);
  END IF;
  RETURN NEXT removed;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_install_checkpoints(
  partitions text[], names text[], schema_version integer, now_ms bigint DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  installed integer;
  bad record;
  stamp bigint := coalesce($4, sync_now_ms());
BEGIN
  IF $1 IS NULL OR $2 IS NULL OR cardinality($1) <> cardinality($2) THEN
    RAISE EXCEPTION 'invalid argument: partitions and names must be non-NULL arrays of the same length'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM sync_assert_nonnegative('schema_version', $3, 1);
  -- One pass finds the first bad element; sync_assert_key raises its message.
  SELECT d.p, d.n INTO bad FROM unnest($1, $2) AS d(p, n)
   WHERE d.p IS NULL OR d.p = '' OR length(d.p) > 512 OR d.n IS NULL OR d.n = '' OR length(d.n) > 512
   LIMIT 1;
  IF FOUND THEN
    PERFORM sync_assert_key('partition', bad.p);
    PERFORM sync_assert_key('name', bad.n);
  END IF;

  INSERT INTO sync_backfill_checkpoints AS c (
    partition, name, schema_version, state, watermark, owner_epoch, observed_rows, updated_at_ms)
  SELECT d.p, d.n, $3, 'declared', 0, 0, 0, stamp
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
DO $$
BEGIN
  EXECUTE format('ALTER FUNCTION sync_claim_checkpoint(text, text, integer, bigint) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  ALTER FUNCTION sync_claim_checkpoint(text, text, integer, bigint) SECURITY DEFINER;
  EXECUTE format('ALTER FUNCTION sync_claim_next_checkpoint(text, integer, bigint, bigint) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  ALTER FUNCTION sync_claim_next_checkpoint(text, integer, bigint, bigint) SECURITY DEFINER;
  EXECUTE format('ALTER FUNCTION sync_advance_checkpoint(text, text, bigint, bigint, bigint, bigint) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  ALTER FUNCTION sync_advance_checkpoint(text, text, bigint, bigint, bigint, bigint) SECURITY DEFINER;
  EXECUTE format('ALTER FUNCTION sync_activate_checkpoint(text, text, bigint, bigint, text[], bigint) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  ALTER FUNCTION sync_activate_checkpoint(text, text, bigint, bigint, text[], bigint) SECURITY DEFINER;
  EXECUTE format('ALTER FUNCTION sync_remove_checkpoint(text, text) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  ALTER FUNCTION sync_remove_checkpoint(text, text) SECURITY DEFINER;
  EXECUTE format('ALTER FUNCTION sync_install_checkpoints(text[], text[], integer, bigint) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  ALTER FUNCTION sync_install_checkpoints(text[], text[], integer, bigint) SECURITY DEFINER;
  EXECUTE format('ALTER FUNCTION sync_first_undeclared_checkpoint(integer, text[], text[], text[]) SET search_path = pg_catalog, %I, pg_temp', current_schema());
END;
$$;
-- +goose StatementEnd

DROP FUNCTION sync_assert_source_tables(text[]);
DROP FUNCTION sync_assert_now_ms(text, bigint);
DROP SEQUENCE sync_checkpoint_epoch_floor;
