-- A commit lands at seq N only in the transaction that raised
-- max_commit_seq to N, and the triggers call no function of their schema.
--
-- * sync_partitions_guard: a write of a partition row that leaves
--   max_commit_seq as it is (a "touch") is the owner's alone (the fence
--   raise of sync_install_checkpoints, the horizon raise of sync_prune_log,
--   which run as the owner); every other role is refused. When the owner
--   touches a head that has no commit (a hole), it rewrites the partition's
--   fence row in the same (sub)transaction (no fence row: refused), and
--   syncular_writer_fence refuses a commit whose partition row and fence row
--   versions come from one (sub)transaction. The update trigger's WHEN now
--   lets only a +1 allocation through without a call.
-- * syncular_writer_fence and sync_changes_follow_commit carry the body of
--   sync_xid_is_current written out instead of calling it: replacing or
--   dropping a helper (the schema's owner can) no longer switches a rule off.
-- * Ops: a change is op 1 (upsert) or 2 (delete): the change trigger
--   refuses any other for every writer, sync_append_commit checks its
--   argument first (22023).
--
-- Function bodies are verbatim copies of sql/functions/*.sql (the row
-- triggers with @extschema@ replaced by this schema); the Down restores
-- 00007's bodies and trigger.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_partitions_guard()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  IF TG_OP OPERATOR(pg_catalog.=) 'UPDATE'
     AND NEW.partition OPERATOR(pg_catalog.=) OLD.partition
     AND NEW.max_commit_seq OPERATOR(pg_catalog.=) OLD.max_commit_seq
     AND NEW.horizon_seq OPERATOR(pg_catalog.>=) OLD.horizon_seq
     AND NEW.horizon_seq OPERATOR(pg_catalog.<=) NEW.max_commit_seq THEN
    -- The owner: of the table, or of this trigger's function (whom the
    -- SECURITY DEFINER functions of the same migration run as).
    IF NOT (SELECT pg_catalog.pg_has_role(CURRENT_USER, c.relowner, 'USAGE')
                   OR pg_catalog.pg_has_role(CURRENT_USER, f.proowner, 'USAGE')
              FROM pg_catalog.pg_trigger t
              JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.tgrelid
              JOIN pg_catalog.pg_proc f ON f.oid OPERATOR(pg_catalog.=) t.tgfoid
             WHERE t.tgrelid OPERATOR(pg_catalog.=) TG_RELID AND t.tgname OPERATOR(pg_catalog.=) TG_NAME) THEN
      RAISE EXCEPTION 'sync.storage.partition_seq_rejected'
        USING ERRCODE = 'check_violation',
              DETAIL = pg_catalog.format('partition %L: an update that leaves max_commit_seq at %s allocates nothing (a touch); only the owner''s functions write the row without allocating (a fence or horizon raise), and %s is not the owner',
                                         NEW.partition, NEW.max_commit_seq, CURRENT_USER),
              HINT = 'Allocate a seq with max_commit_seq = max_commit_seq + 1; lock the row with SELECT ... FOR UPDATE (sync_lock_partition).';
    END IF;
    IF NEW.max_commit_seq OPERATOR(pg_catalog.>) NEW.horizon_seq
       AND NOT EXISTS (SELECT 1 FROM sync_commits c
                        WHERE c.partition OPERATOR(pg_catalog.=) NEW.partition
                          AND c.commit_seq OPERATOR(pg_catalog.=) NEW.max_commit_seq) THEN
      UPDATE sync_writer_fence f SET required_writer_version = f.required_writer_version
       WHERE f.partition OPERATOR(pg_catalog.=) NEW.partition;
      IF NOT FOUND THEN
        RAISE EXCEPTION 'sync.storage.partition_seq_rejected'
          USING ERRCODE = 'check_violation',
                DETAIL = pg_catalog.format('partition %L: its head %s has no commit (a seq allocated by a transaction that committed none), and a write of the partition row that allocates nothing would let this transaction fill it; the partition has no fence row to mark that with',
                                           NEW.partition, NEW.max_commit_seq),
                HINT = 'Push to the partition first (the next commit moves the head past the empty seq), or prune through the head.';
      END IF;
    END IF;
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'sync.storage.partition_seq_rejected'
    USING ERRCODE = 'check_violation',
          DETAIL = pg_catalog.format('partition %L: max_commit_seq %s -> %s, horizon_seq %s -> %s (%s); allocations add 1, the horizon only rises through sync_prune_log',
                          NEW.partition,
                          CASE WHEN TG_OP OPERATOR(pg_catalog.=) 'UPDATE' THEN OLD.max_commit_seq::pg_catalog.text ELSE 'new' END, NEW.max_commit_seq,
                          CASE WHEN TG_OP OPERATOR(pg_catalog.=) 'UPDATE' THEN OLD.horizon_seq::pg_catalog.text ELSE 'new' END, NEW.horizon_seq,
                          TG_OP);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $migrate$
BEGIN
  EXECUTE replace($fn$CREATE OR REPLACE FUNCTION syncular_writer_fence()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
  required integer;
  head bigint;
  horizon bigint;
  allocated_here boolean;
  touched boolean;
BEGIN
  SELECT f.required_writer_version, p.max_commit_seq, p.horizon_seq,
         CASE
           WHEN p.xmin IS NULL OR p.xmin::pg_catalog.text::bigint OPERATOR(pg_catalog.<) 3 THEN false
           WHEN (p.xmin::pg_catalog.text::bigint
                 OPERATOR(pg_catalog.-) (pg_catalog.pg_current_xact_id()::pg_catalog.text::bigint OPERATOR(pg_catalog.&) 4294967295)
                 OPERATOR(pg_catalog.+) 4294967296) OPERATOR(pg_catalog.%) 4294967296
                OPERATOR(pg_catalog.>=) 2147483648 THEN false
           ELSE coalesce(pg_catalog.pg_xact_status((
                  pg_catalog.pg_current_xact_id()::pg_catalog.text::bigint OPERATOR(pg_catalog.+)
                  (p.xmin::pg_catalog.text::bigint
                   OPERATOR(pg_catalog.-) (pg_catalog.pg_current_xact_id()::pg_catalog.text::bigint OPERATOR(pg_catalog.&) 4294967295)
                   OPERATOR(pg_catalog.+) 4294967296) OPERATOR(pg_catalog.%) 4294967296
                )::pg_catalog.text::pg_catalog.xid8) OPERATOR(pg_catalog.=) 'in progress', false)
         END,
         coalesce(p.xmin OPERATOR(pg_catalog.=) f.xmin, false)
    INTO required, head, horizon, allocated_here, touched
    FROM (SELECT NEW.partition AS partition) k
    LEFT JOIN @extschema@.sync_partitions p ON p.partition OPERATOR(pg_catalog.=) k.partition
    LEFT JOIN @extschema@.sync_writer_fence f ON f.partition OPERATOR(pg_catalog.=) k.partition;
  IF required IS NOT NULL
     AND (NEW.writer_version IS NULL OR NEW.writer_version OPERATOR(pg_catalog.<) required) THEN
    RAISE EXCEPTION 'sync.storage.writer_fence_rejected'
      USING DETAIL = pg_catalog.format(
        'partition %L requires writer_version >= %s; the commit offered %s',
        NEW.partition, required, coalesce(NEW.writer_version::pg_catalog.text, 'NULL')),
      HINT = 'Upgrade the writer to the schema version the fence requires.';
  END IF;
  IF head IS NULL
     OR NEW.commit_seq OPERATOR(pg_catalog.<>) head
     OR NEW.commit_seq OPERATOR(pg_catalog.<=) horizon
     OR NOT allocated_here
     OR touched THEN
    RAISE EXCEPTION 'sync.storage.commit_not_at_head'
      USING DETAIL = pg_catalog.format(
        'partition %L: a commit takes the seq its own transaction allocated from sync_partitions.max_commit_seq (head %s, horizon %s, allocated here: %s); the commit offered %s%s',
        NEW.partition, coalesce(head::pg_catalog.text, 'none'),
        coalesce(horizon::pg_catalog.text, 'none'),
        coalesce(allocated_here AND NOT touched, false), NEW.commit_seq,
        CASE WHEN touched THEN '; this (sub)transaction also wrote the partition''s fence row (a fence raise, or a fence or horizon raise over a head without its commit), so its partition row version proves no allocation: push in a transaction of its own' ELSE '' END),
      HINT = 'Allocate the seq in the same transaction (UPDATE sync_partitions SET max_commit_seq = max_commit_seq + 1 ... RETURNING max_commit_seq) or call sync_append_commit.';
  END IF;
  RETURN NEW;
END;
$$;$fn$, '@extschema@', quote_ident(current_schema()));
END;
$migrate$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $migrate$
BEGIN
  EXECUTE replace($fn$CREATE OR REPLACE FUNCTION sync_changes_follow_commit()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  IF NOT coalesce((SELECT CASE
                     WHEN c.xmin::pg_catalog.text::bigint OPERATOR(pg_catalog.<) 3 THEN false
                     WHEN (c.xmin::pg_catalog.text::bigint
                           OPERATOR(pg_catalog.-) (pg_catalog.pg_current_xact_id()::pg_catalog.text::bigint OPERATOR(pg_catalog.&) 4294967295)
                           OPERATOR(pg_catalog.+) 4294967296) OPERATOR(pg_catalog.%) 4294967296
                          OPERATOR(pg_catalog.>=) 2147483648 THEN false
                     ELSE pg_catalog.pg_xact_status((
                            pg_catalog.pg_current_xact_id()::pg_catalog.text::bigint OPERATOR(pg_catalog.+)
                            (c.xmin::pg_catalog.text::bigint
                             OPERATOR(pg_catalog.-) (pg_catalog.pg_current_xact_id()::pg_catalog.text::bigint OPERATOR(pg_catalog.&) 4294967295)
                             OPERATOR(pg_catalog.+) 4294967296) OPERATOR(pg_catalog.%) 4294967296
                          )::pg_catalog.text::pg_catalog.xid8) OPERATOR(pg_catalog.=) 'in progress'
                   END
                     FROM @extschema@.sync_commits c
                    WHERE c.partition OPERATOR(pg_catalog.=) NEW.partition
                      AND c.commit_seq OPERATOR(pg_catalog.=) NEW.commit_seq), false) THEN
    RAISE EXCEPTION 'sync.storage.change_without_commit'
      USING DETAIL = pg_catalog.format('%s: partition %L has no commit %s appended by this transaction',
                                       TG_TABLE_NAME, NEW.partition, NEW.commit_seq),
            HINT = 'Insert changes in the transaction that appends their commit (sync_append_commit does both).';
  END IF;
  -- NEW.op exists on sync_changes only; the inner IF is planned only there.
  IF TG_TABLE_NAME OPERATOR(pg_catalog.=) 'sync_changes' THEN
    IF NEW.op OPERATOR(pg_catalog.<>) 1 AND NEW.op OPERATOR(pg_catalog.<>) 2 THEN
      RAISE EXCEPTION 'sync.storage.change_op_rejected'
        USING DETAIL = pg_catalog.format('sync_changes: partition %L commit %s change %s has op %s; a change is 1 (upsert) or 2 (delete)',
                                         NEW.partition, NEW.commit_seq, NEW.idx, NEW.op);
    END IF;
  END IF;
  RETURN NULL;
END;
$$;$fn$, '@extschema@', quote_ident(current_schema()));
END;
$migrate$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_append_commit(
  partition text, client_id text, client_commit_id text, actor_id text,
  created_at_ms bigint, writer_version bigint,
  tbls text[], row_ids text[], ops smallint[], row_versions bigint[],
  scopes jsonb[], payloads bytea[])
RETURNS jsonb
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  n integer := cardinality($7);
  stored jsonb;
  seq bigint;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('client_id', $2);
  PERFORM sync_assert_key('client_commit_id', $3);
  PERFORM sync_assert_key('actor_id', $4);
  PERFORM sync_assert_nonnegative('created_at_ms', $5);
  PERFORM sync_assert_sources($7);
  IF $8 IS NULL OR $9 IS NULL OR $10 IS NULL OR $11 IS NULL OR $12 IS NULL
     OR cardinality($8) <> n OR cardinality($9) <> n OR cardinality($10) <> n
     OR cardinality($11) <> n OR cardinality($12) <> n THEN
    RAISE EXCEPTION 'invalid argument: the change arrays must all be non-NULL and of the same length (% tables)', n
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF array_position($8, NULL) IS NOT NULL OR array_position($9, NULL) IS NOT NULL
     OR array_position($11, NULL) IS NOT NULL THEN
    RAISE EXCEPTION 'invalid argument: row ids, ops and scopes must not contain NULL'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- Row ids are keys like every other name (non-empty, at most 512
  -- characters); row versions are NULL or non-negative.
  IF EXISTS (SELECT 1 FROM unnest($8) r WHERE r = '' OR length(r) > 512) THEN
    RAISE EXCEPTION 'invalid argument: every row id must be a non-empty string of at most 512 characters'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- Upstream's op codes (the change trigger refuses any other for every
  -- writer; this names the argument first). One array expression, no query.
  IF NOT $9 <@ '{1,2}'::smallint[] THEN
    RAISE EXCEPTION 'invalid argument: every op must be 1 (upsert) or 2 (delete)'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF EXISTS (SELECT 1 FROM unnest($10) v WHERE v < 0) THEN
    RAISE EXCEPTION 'invalid argument: row versions must be NULL or at least 0'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;

  PERFORM sync_lock_partition($1);
  SELECT r.result INTO stored FROM sync_push_results r
   WHERE r.partition = $1 AND r.client_id = $2 AND r.client_commit_id = $3;
  IF FOUND THEN
    RETURN stored || '{"replayed": true}'::jsonb;
  END IF;

  UPDATE sync_partitions p SET max_commit_seq = p.max_commit_seq + 1
   WHERE p.partition = $1
  RETURNING p.max_commit_seq INTO seq;
  INSERT INTO sync_commits (partition, commit_seq, client_id, client_commit_id, actor_id, created_at_ms, writer_version)
  VALUES ($1, seq, $2, $3, $4, $5, $6);
  INSERT INTO sync_changes (partition, commit_seq, idx, tbl, row_id, op, row_version, scopes, payload)
  SELECT $1, seq, (c.i - 1)::integer, c.tbl, c.row_id, c.op, c.row_version, c.scope, c.payload
    FROM unnest($7, $8, $9, $10, $11, $12) WITH ORDINALITY
         AS c(tbl, row_id, op, row_version, scope, payload, i);
  INSERT INTO sync_change_scopes (partition, tbl, var, value, commit_seq)
  SELECT DISTINCT $1, c.tbl, s.key,
         CASE jsonb_typeof(v.value) WHEN 'string' THEN v.value #>> '{}' ELSE v.value::text END, seq
    FROM unnest($7, $11) AS c(tbl, scope)
   CROSS JOIN LATERAL jsonb_each(c.scope) AS s(key, value)
   CROSS JOIN LATERAL jsonb_array_elements(
         CASE jsonb_typeof(s.value) WHEN 'array' THEN s.value ELSE jsonb_build_array(s.value) END) AS v(value)
  ON CONFLICT DO NOTHING;
  stored := jsonb_build_object('status', 'applied', 'commitSeq', seq);
  INSERT INTO sync_push_results (partition, client_id, client_commit_id, result)
  VALUES ($1, $2, $3, stored);
  RETURN stored || '{"replayed": false}'::jsonb;
END;
$$;
-- +goose StatementEnd

-- CREATE OR REPLACE resets SET: restore the pinned search_path 00007 gave
-- the guard and sync_append_commit (neither is SECURITY DEFINER; grants
-- survive a replace). The two row triggers stay unpinned.
-- +goose StatementBegin
DO $$
BEGIN
  EXECUTE format('ALTER FUNCTION sync_partitions_guard() SET search_path = pg_catalog, %I, pg_temp', current_schema());
  EXECUTE format('ALTER FUNCTION sync_append_commit(text, text, text, text, bigint, bigint, text[], text[], smallint[], bigint[], jsonb[], bytea[]) SET search_path = pg_catalog, %I, pg_temp', current_schema());
END;
$$;
-- +goose StatementEnd

-- WHEN lets a legal allocation (+1, the horizon in bounds) through without
-- a function call; anything else reaches the guard, now including a write
-- that leaves the head as it is (a touch: a fence raise, a horizon raise, or
-- an attempt to fill a hole).
DROP TRIGGER sync_partitions_guard_update ON sync_partitions;
CREATE TRIGGER sync_partitions_guard_update
BEFORE UPDATE ON sync_partitions FOR EACH ROW
WHEN (NEW.max_commit_seq <> OLD.max_commit_seq + 1 OR NEW.partition <> OLD.partition
      OR NEW.horizon_seq < OLD.horizon_seq OR NEW.horizon_seq > NEW.max_commit_seq)
EXECUTE FUNCTION sync_partitions_guard();

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_partitions_guard()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  RAISE EXCEPTION 'sync.storage.partition_seq_rejected'
    USING ERRCODE = 'check_violation',
          DETAIL = format('partition %L: max_commit_seq %s -> %s, horizon_seq %s -> %s (%s); allocations add 1, the horizon only rises through sync_prune_log',
                          NEW.partition,
                          CASE WHEN TG_OP = 'UPDATE' THEN OLD.max_commit_seq::text ELSE 'new' END, NEW.max_commit_seq,
                          CASE WHEN TG_OP = 'UPDATE' THEN OLD.horizon_seq::text ELSE 'new' END, NEW.horizon_seq,
                          TG_OP);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $migrate$
BEGIN
  EXECUTE replace($fn$CREATE OR REPLACE FUNCTION syncular_writer_fence()
RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
  required integer;
  head bigint;
  horizon bigint;
  allocated_here boolean;
BEGIN
  SELECT f.required_writer_version, p.max_commit_seq, p.horizon_seq,
         @extschema@.sync_xid_is_current(p.xmin)
    INTO required, head, horizon, allocated_here
    FROM (SELECT NEW.partition AS partition) k
    LEFT JOIN @extschema@.sync_partitions p ON p.partition OPERATOR(pg_catalog.=) k.partition
    LEFT JOIN @extschema@.sync_writer_fence f ON f.partition OPERATOR(pg_catalog.=) k.partition;
  IF required IS NOT NULL
     AND (NEW.writer_version IS NULL OR NEW.writer_version OPERATOR(pg_catalog.<) required) THEN
    RAISE EXCEPTION 'sync.storage.writer_fence_rejected'
      USING DETAIL = pg_catalog.format(
        'partition %L requires writer_version >= %s; the commit offered %s',
        NEW.partition, required, coalesce(NEW.writer_version::pg_catalog.text, 'NULL')),
      HINT = 'Upgrade the writer to the schema version the fence requires.';
  END IF;
  IF head IS NULL
     OR NEW.commit_seq OPERATOR(pg_catalog.<>) head
     OR NEW.commit_seq OPERATOR(pg_catalog.<=) horizon
     OR NOT allocated_here THEN
    RAISE EXCEPTION 'sync.storage.commit_not_at_head'
      USING DETAIL = pg_catalog.format(
        'partition %L: a commit takes the seq its own transaction allocated from sync_partitions.max_commit_seq (head %s, horizon %s, allocated here: %s); the commit offered %s',
        NEW.partition, coalesce(head::pg_catalog.text, 'none'),
        coalesce(horizon::pg_catalog.text, 'none'),
        coalesce(allocated_here, false), NEW.commit_seq),
      HINT = 'Allocate the seq in the same transaction (UPDATE sync_partitions SET max_commit_seq = max_commit_seq + 1 ... RETURNING max_commit_seq) or call sync_append_commit.';
  END IF;
  RETURN NEW;
END;
$$;$fn$, '@extschema@', quote_ident(current_schema()));
END;
$migrate$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $migrate$
BEGIN
  EXECUTE replace($fn$CREATE OR REPLACE FUNCTION sync_changes_follow_commit()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  IF NOT coalesce((SELECT @extschema@.sync_xid_is_current(c.xmin)
                     FROM @extschema@.sync_commits c
                    WHERE c.partition OPERATOR(pg_catalog.=) NEW.partition
                      AND c.commit_seq OPERATOR(pg_catalog.=) NEW.commit_seq), false) THEN
    RAISE EXCEPTION 'sync.storage.change_without_commit'
      USING DETAIL = pg_catalog.format('%s: partition %L has no commit %s appended by this transaction',
                                       TG_TABLE_NAME, NEW.partition, NEW.commit_seq),
            HINT = 'Insert changes in the transaction that appends their commit (sync_append_commit does both).';
  END IF;
  RETURN NULL;
END;
$$;$fn$, '@extschema@', quote_ident(current_schema()));
END;
$migrate$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_append_commit(
  partition text, client_id text, client_commit_id text, actor_id text,
  created_at_ms bigint, writer_version bigint,
  tbls text[], row_ids text[], ops smallint[], row_versions bigint[],
  scopes jsonb[], payloads bytea[])
RETURNS jsonb
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  n integer := cardinality($7);
  stored jsonb;
  seq bigint;
BEGIN
  PERFORM sync_assert_key('partition', $1);
  PERFORM sync_assert_key('client_id', $2);
  PERFORM sync_assert_key('client_commit_id', $3);
  PERFORM sync_assert_key('actor_id', $4);
  PERFORM sync_assert_nonnegative('created_at_ms', $5);
  PERFORM sync_assert_sources($7);
  IF $8 IS NULL OR $9 IS NULL OR $10 IS NULL OR $11 IS NULL OR $12 IS NULL
     OR cardinality($8) <> n OR cardinality($9) <> n OR cardinality($10) <> n
     OR cardinality($11) <> n OR cardinality($12) <> n THEN
    RAISE EXCEPTION 'invalid argument: the change arrays must all be non-NULL and of the same length (% tables)', n
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF array_position($8, NULL) IS NOT NULL OR array_position($9, NULL) IS NOT NULL
     OR array_position($11, NULL) IS NOT NULL THEN
    RAISE EXCEPTION 'invalid argument: row ids, ops and scopes must not contain NULL'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- Row ids are keys like every other name (non-empty, at most 512
  -- characters); row versions are NULL or non-negative.
  IF EXISTS (SELECT 1 FROM unnest($8) r WHERE r = '' OR length(r) > 512) THEN
    RAISE EXCEPTION 'invalid argument: every row id must be a non-empty string of at most 512 characters'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF EXISTS (SELECT 1 FROM unnest($10) v WHERE v < 0) THEN
    RAISE EXCEPTION 'invalid argument: row versions must be NULL or at least 0'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;

  PERFORM sync_lock_partition($1);
  SELECT r.result INTO stored FROM sync_push_results r
   WHERE r.partition = $1 AND r.client_id = $2 AND r.client_commit_id = $3;
  IF FOUND THEN
    RETURN stored || '{"replayed": true}'::jsonb;
  END IF;

  UPDATE sync_partitions p SET max_commit_seq = p.max_commit_seq + 1
   WHERE p.partition = $1
  RETURNING p.max_commit_seq INTO seq;
  INSERT INTO sync_commits (partition, commit_seq, client_id, client_commit_id, actor_id, created_at_ms, writer_version)
  VALUES ($1, seq, $2, $3, $4, $5, $6);
  INSERT INTO sync_changes (partition, commit_seq, idx, tbl, row_id, op, row_version, scopes, payload)
  SELECT $1, seq, (c.i - 1)::integer, c.tbl, c.row_id, c.op, c.row_version, c.scope, c.payload
    FROM unnest($7, $8, $9, $10, $11, $12) WITH ORDINALITY
         AS c(tbl, row_id, op, row_version, scope, payload, i);
  INSERT INTO sync_change_scopes (partition, tbl, var, value, commit_seq)
  SELECT DISTINCT $1, c.tbl, s.key,
         CASE jsonb_typeof(v.value) WHEN 'string' THEN v.value #>> '{}' ELSE v.value::text END, seq
    FROM unnest($7, $11) AS c(tbl, scope)
   CROSS JOIN LATERAL jsonb_each(c.scope) AS s(key, value)
   CROSS JOIN LATERAL jsonb_array_elements(
         CASE jsonb_typeof(s.value) WHEN 'array' THEN s.value ELSE jsonb_build_array(s.value) END) AS v(value)
  ON CONFLICT DO NOTHING;
  stored := jsonb_build_object('status', 'applied', 'commitSeq', seq);
  INSERT INTO sync_push_results (partition, client_id, client_commit_id, result)
  VALUES ($1, $2, $3, stored);
  RETURN stored || '{"replayed": false}'::jsonb;
END;
$$;
-- +goose StatementEnd

-- CREATE OR REPLACE resets SET: restore the pinned search_path 00007 gave
-- the guard and sync_append_commit (neither is SECURITY DEFINER; grants
-- survive a replace). The two row triggers stay unpinned.
-- +goose StatementBegin
DO $$
BEGIN
  EXECUTE format('ALTER FUNCTION sync_partitions_guard() SET search_path = pg_catalog, %I, pg_temp', current_schema());
  EXECUTE format('ALTER FUNCTION sync_append_commit(text, text, text, text, bigint, bigint, text[], text[], smallint[], bigint[], jsonb[], bytea[]) SET search_path = pg_catalog, %I, pg_temp', current_schema());
END;
$$;
-- +goose StatementEnd

DROP TRIGGER sync_partitions_guard_update ON sync_partitions;
CREATE TRIGGER sync_partitions_guard_update
BEFORE UPDATE ON sync_partitions FOR EACH ROW
WHEN (NEW.partition <> OLD.partition
      OR NEW.max_commit_seq < OLD.max_commit_seq OR NEW.max_commit_seq > OLD.max_commit_seq + 1
      OR NEW.horizon_seq < OLD.horizon_seq OR NEW.horizon_seq > NEW.max_commit_seq)
EXECUTE FUNCTION sync_partitions_guard();
