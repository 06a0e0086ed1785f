-- The log a backfill reads: a partition's source changes and the coverage
-- checks activation relies on (sync_source_coverage_seq, sync_source_changes_above).

-- name: SourceChanges :many
SELECT * FROM sync_changes
 WHERE partition = @partition AND tbl = ANY(@sources::text[])
   AND commit_seq > @after_seq AND commit_seq <= @through_seq
 ORDER BY commit_seq, idx;

-- name: SourceCoverageSeq :one
SELECT sync_source_coverage_seq(@partition, @sources::text[])::bigint AS seq;

-- name: SourceChangesAbove :one
SELECT sync_source_changes_above(@partition, @sources::text[], @seq)::text AS result;

-- AssertSourceTables: a backfill's sources are tables of the stored schema
-- (the rule activation applies), checked before anything is claimed.
-- name: AssertSourceTables :exec
SELECT sync_assert_source_tables(@sources::text[]);
