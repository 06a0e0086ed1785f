-- True when x, a row version's xmin, is the current transaction or one of
-- its savepoints: the test behind "allocated by this transaction" and
-- "appended by this transaction". A row version whose creator is still in
-- progress is visible only to that creator, so for a row this transaction
-- can see, "in progress" means "mine". The 64-bit id is rebuilt from the
-- 32-bit xmin relative to the current transaction's id: its savepoints are
-- numbered at or above it, anything older is not this transaction.
--
-- The row triggers (syncular_writer_fence, sync_changes_follow_commit) do
-- not call it: they carry this expression written out, so replacing or
-- dropping this function (its schema's owner can) switches no rule off.
--
-- A single-expression SQL function with no SET clause, so the planner
-- inlines it into the calling query; every name is qualified with
-- pg_catalog because it runs on the caller's search_path. CASE keeps
-- pg_xact_status from ever seeing an id it would reject.
CREATE OR REPLACE FUNCTION sync_xid_is_current(x xid)
RETURNS boolean
LANGUAGE sql
VOLATILE
AS $$
  SELECT CASE
    WHEN $1 IS NULL OR $1::pg_catalog.text::bigint OPERATOR(pg_catalog.<) 3 THEN false
    WHEN ($1::pg_catalog.text::bigint
          OPERATOR(pg_catalog.-) (pg_catalog.pg_current_xact_id()::pg_catalog.text::bigint OPERATOR(pg_catalog.&) 4294967295)
          OPERATOR(pg_catalog.+) 4294967296) OPERATOR(pg_catalog.%) 4294967296
         OPERATOR(pg_catalog.>=) 2147483648 THEN false
    ELSE coalesce(pg_catalog.pg_xact_status((
           pg_catalog.pg_current_xact_id()::pg_catalog.text::bigint OPERATOR(pg_catalog.+)
           ($1::pg_catalog.text::bigint
            OPERATOR(pg_catalog.-) (pg_catalog.pg_current_xact_id()::pg_catalog.text::bigint OPERATOR(pg_catalog.&) 4294967295)
            OPERATOR(pg_catalog.+) 4294967296) OPERATOR(pg_catalog.%) 4294967296
         )::pg_catalog.text::pg_catalog.xid8) OPERATOR(pg_catalog.=) 'in progress', false)
  END
$$;
REVOKE ALL ON FUNCTION sync_xid_is_current(xid) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_xid_is_current(xid) TO PUBLIC;
COMMENT ON FUNCTION sync_xid_is_current(xid) IS 'internal: true when xid (a row version''s xmin) is the current transaction or one of its savepoints; the triggers carry its expression written out.';
