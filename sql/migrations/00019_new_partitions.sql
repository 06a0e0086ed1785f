-- Issue 17, the writer's races and new partitions:
--  * a projection declared for every partition holds for partitions created
--    later: sync_install_all_partitions records it in the one row of
--    sync_all_partition_checkpoints, and sync_partitions' AFTER INSERT
--    trigger (sync_partition_created) gives a new partition its fence and
--    its checkpoints (activated at watermark 0: it has no history);
--  * sync_push outside READ COMMITTED locks the marker row
--    (sync_lock_schema_marker): a snapshot older than a bump fails with
--    40001 instead of storing a commit at the old version;
--  * sync_begin_schema_change bounds its wait and names the holders of a
--    conflicting lock (sync_schema_change_blockers), prepared transactions
--    included.
-- Function bodies are verbatim copies of sql/functions/*.sql; the Down
-- restores 00010's sync_push and 00003's sync_begin_schema_change.

-- +goose Up
CREATE TABLE sync_all_partition_checkpoints (
  id integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
  names text[] NOT NULL DEFAULT '{}',
  schema_versions integer[] NOT NULL DEFAULT '{}',
  updated_at_ms bigint NOT NULL DEFAULT 0,
  CHECK (cardinality(names) = cardinality(schema_versions))
);
-- The row always exists, so a creator's FOR SHARE always finds the version
-- the declaration updated (a first declaration included).
INSERT INTO sync_all_partition_checkpoints DEFAULT VALUES;
REVOKE ALL ON sync_all_partition_checkpoints FROM PUBLIC;
GRANT SELECT ON sync_all_partition_checkpoints TO sync_reader;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_install_all_partitions(names text[], schema_version integer, now_ms bigint DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql
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
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_partition_created()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
  declared sync_all_partition_checkpoints;
  required integer;
  below sync_commits;
  history boolean;
BEGIN
  SELECT a.* INTO declared FROM sync_all_partition_checkpoints a WHERE a.id = 1 FOR SHARE;
  IF NOT FOUND OR cardinality(declared.names) = 0 THEN
    RETURN NULL;
  END IF;
  -- In a block of its own, so a subtransaction: the head rule reads a fence
  -- row written by the same (sub)transaction as the partition row as an
  -- owner's touch (syncular_writer_fence: p.xmin = f.xmin), and this is the
  -- creator's own allocation, which must stay pushable.
  BEGIN
    INSERT INTO sync_writer_fence AS f (partition, required_writer_version)
    SELECT NEW.partition, max(v.v) FROM unnest(declared.schema_versions) AS v(v)
    ON CONFLICT (partition) DO UPDATE
      SET required_writer_version = EXCLUDED.required_writer_version
      WHERE f.required_writer_version < EXCLUDED.required_writer_version;
  EXCEPTION WHEN OTHERS THEN
    RAISE;
  END;
  SELECT f.required_writer_version INTO required FROM sync_writer_fence f WHERE f.partition = NEW.partition;
  SELECT c.* INTO below FROM sync_commits c
   WHERE c.partition = NEW.partition AND (c.writer_version IS NULL OR c.writer_version < required)
   ORDER BY c.commit_seq LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'sync.storage.writer_fence_rejected'
      USING DETAIL = format('partition %L requires writer_version >= %s; the commit offered %s',
                            NEW.partition, required, coalesce(below.writer_version::text, 'NULL')),
            HINT = 'Upgrade the writer to the schema version the fence requires.';
  END IF;
  history := EXISTS (SELECT 1 FROM sync_commits c
                      WHERE c.partition = NEW.partition AND NOT sync_xid_is_current(c.xmin));
  INSERT INTO sync_backfill_checkpoints AS c (
    partition, name, schema_version, state, watermark, owner_epoch, observed_rows, updated_at_ms)
  SELECT NEW.partition, d.n, d.v, CASE WHEN history THEN 'declared' ELSE 'activated' END, 0, 0, 0, sync_now_ms()
    FROM unnest(declared.names, declared.schema_versions) AS d(n, v)
  ON CONFLICT (partition, name) DO NOTHING;
  RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_lock_schema_marker()
RETURNS bigint
LANGUAGE plpgsql
AS $$
DECLARE
  version bigint;
BEGIN
  LOCK TABLE sync_partitions IN ROW SHARE MODE;
  SELECT m.schema_version INTO version FROM sync_schema_meta m WHERE m.id = 1 FOR SHARE;
  RETURN coalesce(version, 0);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_schema_change_blockers(
  OUT pid integer, OUT prepared_gid text, OUT role text, OUT lock_modes text, OUT since timestamptz)
RETURNS SETOF record
LANGUAGE sql
STABLE
AS $$
  SELECT l.pid, x.gid::text, coalesce(x.owner, r.rolname)::text,
         string_agg(l.mode, ',' ORDER BY l.mode), min(coalesce(x.prepared, a.xact_start))
    FROM pg_locks l
    LEFT JOIN pg_locks t ON l.pid IS NULL AND t.pid IS NULL AND t.locktype = 'transactionid'
                        AND t.virtualtransaction = l.virtualtransaction
    LEFT JOIN pg_prepared_xacts x ON x.transaction = t.transactionid
    LEFT JOIN pg_stat_activity a ON a.pid = l.pid
    LEFT JOIN pg_roles r ON r.oid = a.usesysid
   WHERE l.locktype = 'relation' AND l.relation = 'sync_partitions'::regclass
     AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
     AND l.granted AND l.mode <> 'AccessShareLock'
     AND l.pid IS DISTINCT FROM pg_backend_pid()
   GROUP BY l.pid, l.virtualtransaction, x.gid, x.owner, r.rolname
   ORDER BY x.gid NULLS LAST, l.pid
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_push(
  partition text, running_schema_version integer, expected_log_epoch text,
  declared_names text[], declared_partitions text[], declared_partition_names text[],
  client_id text, client_commit_id text, actor_id text, created_at_ms bigint,
  tbls text[], row_ids text[], ops smallint[], row_versions bigint[], scopes jsonb[], payloads bytea[],
  OUT refusal text, OUT stored_schema_version bigint,
  OUT checkpoint_partition text, OUT checkpoint_name text, OUT result jsonb)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  gate record;
BEGIN
  IF EXISTS (SELECT 1 FROM sync_partitions p WHERE p.partition = $1) THEN
    PERFORM sync_lock_partition($1); -- the row exists: locks it, writes nothing
    IF current_setting('transaction_isolation') <> 'read committed' THEN
      PERFORM sync_lock_schema_marker();
    END IF;
    SELECT g.* INTO gate FROM sync_serve_check($1, $2, $3, $4, $5, $6) AS g;
  ELSE
    BEGIN
      PERFORM sync_lock_partition($1);
      IF current_setting('transaction_isolation') <> 'read committed' THEN
        PERFORM sync_lock_schema_marker();
      END IF;
      SELECT g.* INTO gate FROM sync_serve_check($1, $2, $3, $4, $5, $6) AS g;
      IF gate.refusal IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'SYRF1'; -- roll the row back, caught below
      END IF;
    EXCEPTION WHEN SQLSTATE 'SYRF1' THEN
      NULL;
    END;
  END IF;
  stored_schema_version := gate.stored_schema_version;
  IF gate.refusal IS NOT NULL THEN
    refusal := gate.refusal;
    checkpoint_partition := gate.checkpoint_partition;
    checkpoint_name := gate.checkpoint_name;
    RETURN;
  END IF;
  result := sync_append_commit($1, $7, $8, $9, $10, $2, $11, $12, $13, $14, $15, $16);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_begin_schema_change()
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
  holders text;
  prepared text;
BEGIN
  IF current_setting('lock_timeout') = '0' THEN
    PERFORM set_config('lock_timeout', '5s', true);
  END IF;
  BEGIN
    LOCK TABLE sync_partitions IN EXCLUSIVE MODE;
  EXCEPTION WHEN lock_not_available THEN
    SELECT string_agg(CASE WHEN b.pid IS NULL
                           THEN format('prepared transaction %L (owner %s, %s)', b.prepared_gid, b.role, b.lock_modes)
                           ELSE format('pid %s (role %s, %s)', b.pid, coalesce(b.role, 'unknown'), b.lock_modes) END, '; '),
           string_agg(format('ROLLBACK PREPARED %L', b.prepared_gid), '; ') FILTER (WHERE b.pid IS NULL)
      INTO holders, prepared
      FROM sync_schema_change_blockers() b;
    RAISE EXCEPTION 'sync_begin_schema_change: the migration lock (EXCLUSIVE on sync_partitions) was not granted within lock_timeout %: held by %',
      current_setting('lock_timeout'), coalesce(holders, 'nobody any more (retry)')
      USING ERRCODE = 'lock_not_available',
            HINT = CASE WHEN prepared IS NOT NULL
                        THEN format('A prepared transaction keeps its locks across restarts until it is ended: %s (or COMMIT PREPARED), run by its owner or a superuser. ', prepared)
                        ELSE '' END
                   || 'A session: let its transaction end, or pg_terminate_backend(pid); then retry the bump.';
  END;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER sync_partitions_created AFTER INSERT ON sync_partitions
  FOR EACH ROW EXECUTE FUNCTION sync_partition_created();

-- New functions: no PUBLIC execute, a pinned path; CREATE OR REPLACE reset
-- sync_push's and sync_begin_schema_change's SET and SECURITY DEFINER
-- (their grants survive a replace).
-- +goose StatementBegin
DO $$
DECLARE
  f text;
BEGIN
  FOREACH f IN ARRAY ARRAY['sync_install_all_partitions(text[], integer, bigint)', 'sync_partition_created()',
                           'sync_lock_schema_marker()', 'sync_schema_change_blockers()',
                           'sync_push(text, integer, text, text[], text[], text[], text, text, text, bigint, text[], text[], smallint[], bigint[], jsonb[], bytea[])',
                           'sync_begin_schema_change()'] LOOP
    EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
    EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, %I, pg_temp', f, current_schema());
  END LOOP;
  ALTER FUNCTION sync_install_all_partitions(text[], integer, bigint) SECURITY DEFINER;
  ALTER FUNCTION sync_partition_created() SECURITY DEFINER;
  ALTER FUNCTION sync_lock_schema_marker() SECURITY DEFINER;
  ALTER FUNCTION sync_begin_schema_change() SECURITY DEFINER;
END;
$$;
-- +goose StatementEnd
GRANT EXECUTE ON FUNCTION sync_install_all_partitions(text[], integer, bigint) TO sync_admin;
GRANT EXECUTE ON FUNCTION sync_lock_schema_marker() TO sync_writer;
GRANT EXECUTE ON FUNCTION sync_schema_change_blockers() TO sync_reader;

-- +goose Down
DROP TRIGGER sync_partitions_created ON sync_partitions;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_push(
  partition text, running_schema_version integer, expected_log_epoch text,
  declared_names text[], declared_partitions text[], declared_partition_names text[],
  client_id text, client_commit_id text, actor_id text, created_at_ms bigint,
  tbls text[], row_ids text[], ops smallint[], row_versions bigint[], scopes jsonb[], payloads bytea[],
  OUT refusal text, OUT stored_schema_version bigint,
  OUT checkpoint_partition text, OUT checkpoint_name text, OUT result jsonb)
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  gate record;
BEGIN
  IF EXISTS (SELECT 1 FROM sync_partitions p WHERE p.partition = $1) THEN
    PERFORM sync_lock_partition($1); -- the row exists: locks it, writes nothing
    SELECT g.* INTO gate FROM sync_serve_check($1, $2, $3, $4, $5, $6) AS g;
  ELSE
    BEGIN
      PERFORM sync_lock_partition($1);
      SELECT g.* INTO gate FROM sync_serve_check($1, $2, $3, $4, $5, $6) AS g;
      IF gate.refusal IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'SYRF1'; -- roll the row back, caught below
      END IF;
    EXCEPTION WHEN SQLSTATE 'SYRF1' THEN
      NULL;
    END;
  END IF;
  stored_schema_version := gate.stored_schema_version;
  IF gate.refusal IS NOT NULL THEN
    refusal := gate.refusal;
    checkpoint_partition := gate.checkpoint_partition;
    checkpoint_name := gate.checkpoint_name;
    RETURN;
  END IF;
  result := sync_append_commit($1, $7, $8, $9, $10, $2, $11, $12, $13, $14, $15, $16);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_begin_schema_change()
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
  LOCK TABLE sync_partitions IN EXCLUSIVE MODE;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $$
BEGIN
  EXECUTE format('ALTER FUNCTION sync_push(text, integer, text, text[], text[], text[], text, text, text, bigint, text[], text[], smallint[], bigint[], jsonb[], bytea[]) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  EXECUTE format('ALTER FUNCTION sync_begin_schema_change() SET search_path = pg_catalog, %I, pg_temp', current_schema());
  ALTER FUNCTION sync_begin_schema_change() SECURITY DEFINER;
END;
$$;
-- +goose StatementEnd

DROP FUNCTION sync_schema_change_blockers();
DROP FUNCTION sync_lock_schema_marker();
DROP FUNCTION sync_partition_created();
DROP FUNCTION sync_install_all_partitions(text[], integer, bigint);
DROP TABLE sync_all_partition_checkpoints;
