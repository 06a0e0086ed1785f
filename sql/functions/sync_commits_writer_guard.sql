-- Writer fence and head-only appends: gosync's BEFORE INSERT trigger of
-- sync_commits (sync_commits_writer_guard), so both hold for every writer
-- (a Go service, an old TypeScript binary, a DBA's raw INSERT), under every
-- isolation level. Until 00025 this was the body of syncular_writer_fence(),
-- which an upstream 0.23 server re-creates with its own body at every boot
-- (and drops and re-creates its trigger sync_commits_writer_fence): gosync's
-- rules live here, under a name upstream never touches. Its trigger's name
-- sorts after sync_commits_writer_fence, so it fires last: whatever
-- syncular_writer_fence returns as NEW is what it checks.
--
-- 1. Fence (RFC 0007): a commit whose writer_version is NULL or below the
--    partition's required_writer_version is rejected. No fence row: no barrier.
-- 2. Head: a commit lands at seq N only in the transaction that raised
--    sync_partitions.max_commit_seq to N (above the horizon): the partition
--    row's version must be this transaction's or one of its savepoints'
--    (its xmin is in progress, and a row version in progress is visible only
--    to its creator), and it must not come from a write that allocated
--    nothing. sync_partitions_guard refuses such a write (a "touch") to every
--    role but the owner; when the owner touches a head without its commit (a
--    fence or horizon raise over a hole), it rewrites the fence row in the
--    same (sub)transaction, so "partition row and fence row versions from one
--    (sub)transaction" (p.xmin = f.xmin) is refused here. That is also why a
--    push in the (sub)transaction that raised the partition's fence is
--    refused: push in its own transaction (or after a SAVEPOINT: that
--    allocation is another subtransaction's version). The fence row only
--    the owner writes, so no lower role can undo the mark (ROLLBACK TO
--    undoes the touch with it). Back-dated, far-future and unallocated
--    commits are refused.
--
-- Why this is also the REPEATABLE READ fix: a fence raise writes the
-- partition row (sync_install_checkpoint), and the allocation is an UPDATE
-- of that row. A writer whose snapshot predates the raise fails its
-- allocation with a serialization failure (40001); one that allocated first
-- holds the row lock, so the raise waits for it to commit.
--
-- It calls no function of its own schema: whoever can replace or drop one
-- (the schema's owner) would switch the rule off. The "is this xid mine"
-- test is written out (the body of sync_xid_is_current): the 64-bit id is
-- rebuilt from the 32-bit xmin relative to the current transaction's id
-- (its savepoints are numbered at or above it, anything older is not this
-- transaction), and CASE keeps pg_xact_status from seeing an id it rejects.
-- No SET search_path (a per-row GUC save/restore costs ~7% of a bare
-- insert): every table is qualified with the schema the migration installs
-- it in (@extschema@ is replaced at migration time), every function, type
-- and operator with pg_catalog (IS DISTINCT FROM is avoided: it looks up
-- its = on the path), so nothing on the caller's path (a temp
-- table, a schema the caller owns) can change what it reads.
CREATE OR REPLACE FUNCTION sync_commits_writer_guard()
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
$$;
REVOKE ALL ON FUNCTION sync_commits_writer_guard() FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
COMMENT ON FUNCTION sync_commits_writer_guard() IS 'internal: gosync''s BEFORE INSERT trigger of sync_commits (sync_commits_writer_guard): the writer fence (sync.storage.writer_fence_rejected) and head-only appends (sync.storage.commit_not_at_head), for every writer.';
