-- Append one client commit to a partition's log: allocate its commit_seq,
-- insert the commit (stamped with writer_version, which the writer fence
-- checks), its changes (idx = position in the arrays), their change scopes,
-- and the push result. Idempotent: a (client_id, client_commit_id) already
-- pushed returns its stored result with "replayed": true and appends nothing.
-- Takes the partition lock first, so concurrent replays serialize on it.
-- Changes travel as parallel arrays (one element per change); scopes[i] is a
-- JSON object of scope variable to value (or array of values).
-- Returns {"status": "applied", "commitSeq": n, "replayed": bool}.
CREATE OR REPLACE FUNCTION sync_append_commit(
  partition text, client_id text, client_commit_id text, actor_id text,
  created_at_ms bigint, writer_version bigint,
  tbls text[], row_ids text[], ops smallint[], row_versions bigint[],
  scopes jsonb[], payloads bytea[])
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, @extschema@, pg_temp
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
REVOKE ALL ON FUNCTION sync_append_commit(text,text,text,text,bigint,bigint,text[],text[],smallint[],bigint[],jsonb[],bytea[]) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_append_commit(text,text,text,text,bigint,bigint,text[],text[],smallint[],bigint[],jsonb[],bytea[]) TO sync_writer;
COMMENT ON FUNCTION sync_append_commit(text,text,text,text,bigint,bigint,text[],text[],smallint[],bigint[],jsonb[],bytea[]) IS 'Append one client commit (its changes, scopes and push result) at the partition''s head, stamped with writer_version; idempotent per (client_id, client_commit_id). Returns the push result as JSON.';
-- Example:
--   SELECT sync_append_commit('p1', 'client-1', 'commit-1', 'user-1', 1700000000000, 2,
--     ARRAY['todos'], ARRAY['t1'], ARRAY[1]::smallint[], ARRAY[1]::bigint[],
--     ARRAY['{"owner_id": "user-1"}']::jsonb[], ARRAY['\x7b7d']::bytea[]);
--   -- {"status": "applied", "commitSeq": 1, "replayed": false}
