-- The barrier status at 10^5 partitions. sync_barrier_status: lag reads 0
-- for an activated checkpoint (its projection covers the log by
-- definition; a lag that kept growing with new commits would page a DBA for
-- finished work). sync_barrier_summary: the view a DBA reads first, one row
-- per (schema version, checkpoint, state) with the partition count, the
-- slowest partition and its lag, and the oldest and newest update.

-- +goose Up
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

CREATE VIEW sync_barrier_summary AS
SELECT s.schema_version,
       s.checkpoint,
       s.state,
       count(*)::bigint AS partitions,
       max(s.lag)::bigint AS max_lag,
       (array_agg(s.partition ORDER BY s.lag DESC, s.partition))[1]::text AS slowest_partition,
       min(s.updated_at)::timestamptz AS oldest_update,
       max(s.updated_at)::timestamptz AS newest_update
  FROM sync_barrier_status s
 GROUP BY s.schema_version, s.checkpoint, s.state;

REVOKE ALL ON sync_barrier_summary FROM PUBLIC;
GRANT SELECT ON sync_barrier_summary TO sync_reader;

-- +goose Down
DROP VIEW sync_barrier_summary;
CREATE OR REPLACE VIEW sync_barrier_status AS
SELECT c.partition,
       c.name AS checkpoint,
       c.state,
       c.schema_version,
       f.required_writer_version AS fence_version,
       c.owner_epoch,
       c.watermark,
       coalesce(p.max_commit_seq, 0) AS coverage_seq,
       GREATEST(coalesce(p.max_commit_seq, 0) - c.watermark, 0)::bigint AS lag,
       coalesce(p.horizon_seq, 0)::bigint AS horizon_seq,
       c.observed_rows,
       to_timestamp(c.updated_at_ms / 1000.0)::timestamptz AS updated_at
  FROM sync_backfill_checkpoints c
  LEFT JOIN sync_writer_fence f ON f.partition = c.partition
  LEFT JOIN sync_partitions p ON p.partition = c.partition;
