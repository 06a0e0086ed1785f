-- SourceChanges reads a partition's changes of the source tables with
-- after_seq < commit_seq <= through_seq, in log order: a backfill batch.
-- name: SourceChanges :many
SELECT * FROM sync_changes
 WHERE partition = @partition AND tbl = ANY(@sources::text[])
   AND commit_seq > @after_seq AND commit_seq <= @through_seq
 ORDER BY commit_seq, idx;

-- SourceCoverageSeq is sync_source_coverage_seq: the highest commit seq of a
-- change to the sources (0 when none), the watermark a backfill must reach.
-- name: SourceCoverageSeq :one
SELECT sync_source_coverage_seq(@partition, @sources::text[])::bigint AS seq;

-- SourceChangesAbove is sync_source_changes_above, activation's coverage
-- check: `clean`, `changed` or `unverifiable` (the log is pruned past seq).
-- name: SourceChangesAbove :one
SELECT sync_source_changes_above(@partition, @sources::text[], @seq)::text AS result;

-- AssertSourceTables is sync_assert_source_tables: a backfill's sources are
-- tables of the stored schema (the rule activation applies), checked before
-- anything is claimed.
-- name: AssertSourceTables :exec
SELECT sync_assert_source_tables(@sources::text[]);
