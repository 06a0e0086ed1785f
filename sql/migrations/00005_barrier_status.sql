-- sync_barrier_status: the migration barrier at a glance, for a DBA at psql.
-- One row per (partition, checkpoint). The checkpoint's source tables are not
-- stored, so coverage_seq is the partition's last commit seq: the upper bound
-- of what the projection must cover; lag is how far the watermark trails it.

-- +goose Up
CREATE VIEW sync_barrier_status AS
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

-- +goose Down
DROP VIEW sync_barrier_status;
