-- A push in one call, so one round trip: take the partition lock, apply
-- the refusal rule (sync_serve_check) in a statement that starts after the
-- lock is granted — in READ COMMITTED each statement of this volatile
-- function takes a fresh snapshot, so the gate sees every schema bump that
-- committed while the push waited — and append the commit stamped with the
-- running schema version (sync_append_commit). Returns one row: refusal NULL
-- and result (sync_append_commit's answer), or the refusal columns of
-- sync_serve_check and result NULL. A refused push changes nothing: an
-- existing partition row is only locked; a partition's first push inserts
-- the row inside a block whose subtransaction a refusal rolls back — a cost
-- only that first push pays. The lock is always sync_lock_partition's, with
-- whatever privileges it runs with.
--
-- Outside READ COMMITTED the snapshot is the transaction's, taken before the
-- push waited behind a schema bump: the gate would read the old marker and
-- store a commit at the old version. There the push locks the marker row
-- (sync_lock_schema_marker), which the bump updated: a stale snapshot fails
-- with 40001 and nothing is stored. READ COMMITTED pushes (the common case)
-- pay one setting read.
CREATE OR REPLACE FUNCTION sync_push(
  partition text, running_schema_version integer, expected_log_epoch text,
  declared_names text[], declared_partitions text[], declared_partition_names text[],
  client_id text, client_commit_id text, actor_id text, created_at_ms bigint,
  tbls text[], row_ids text[], ops smallint[], row_versions bigint[], scopes jsonb[], payloads bytea[],
  OUT refusal text, OUT stored_schema_version bigint,
  OUT checkpoint_partition text, OUT checkpoint_name text, OUT result jsonb)
LANGUAGE plpgsql
SET search_path = pg_catalog, @extschema@, pg_temp
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
REVOKE ALL ON FUNCTION sync_push(text,integer,text,text[],text[],text[],text,text,text,bigint,text[],text[],smallint[],bigint[],jsonb[],bytea[]) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_push(text,integer,text,text[],text[],text[],text,text,text,bigint,text[],text[],smallint[],bigint[],jsonb[],bytea[]) TO sync_writer;
COMMENT ON FUNCTION sync_push(text,integer,text,text[],text[],text[],text,text,text,bigint,text[],text[],smallint[],bigint[],jsonb[],bytea[]) IS 'A push in one round trip: partition lock, the refusal rule (sync_serve_check), then sync_append_commit at the running schema version. One row: refusal NULL and result, or the refusal and result NULL.';
-- Example:
--   SELECT refusal, result FROM sync_push('p1', 0, NULL, '{}', '{}', '{}',
--     'client-1', 'commit-1', 'user-1', 1700000000000,
--     ARRAY['todos'], ARRAY['t1'], ARRAY[1]::smallint[], ARRAY[1]::bigint[],
--     ARRAY['{"owner_id": "user-1"}']::jsonb[], ARRAY['\x7b7d']::bytea[]);
--   -- refusal NULL, result {"status": "applied", ...}; or refusal schema / epoch / checkpoint
