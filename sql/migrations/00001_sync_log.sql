-- The sync log tables of @syncular/server 0.23.0's Postgres storage, column
-- for column, so a TypeScript server and Go services can share one database.
-- Constraint and index names are Postgres' defaults for the upstream DDL
-- (<table>_pkey, <table>_<column>_check) or the upstream's explicit names.

-- +goose Up
CREATE TABLE sync_partitions(
  partition TEXT PRIMARY KEY,
  max_commit_seq BIGINT NOT NULL DEFAULT 0,
  horizon_seq BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE sync_partition_registry(
  partition TEXT PRIMARY KEY,
  log_epoch TEXT NOT NULL,
  epoch_required BOOLEAN NOT NULL DEFAULT FALSE,
  last_authenticated_at_ms BIGINT NOT NULL
);

CREATE TABLE sync_row_scopes(
  partition TEXT NOT NULL, tbl TEXT NOT NULL,
  var TEXT NOT NULL, value TEXT NOT NULL, row_id TEXT NOT NULL,
  PRIMARY KEY(partition, tbl, var, value, row_id)
);
-- Row writes replace a row's scope entries by (partition, tbl, row_id);
-- row_id is the last primary-key column, so without this index every write
-- would scan the table's whole scope range.
CREATE INDEX sync_row_scopes_by_row
  ON sync_row_scopes(partition, tbl, row_id);

CREATE TABLE sync_commits(
  partition TEXT NOT NULL, commit_seq BIGINT NOT NULL,
  client_id TEXT NOT NULL, client_commit_id TEXT NOT NULL,
  actor_id TEXT NOT NULL, created_at_ms BIGINT NOT NULL,
  writer_version BIGINT,
  PRIMARY KEY(partition, commit_seq)
);
CREATE INDEX sync_commits_by_time
  ON sync_commits(partition, created_at_ms);

CREATE TABLE sync_changes(
  partition TEXT NOT NULL, commit_seq BIGINT NOT NULL, idx INTEGER NOT NULL,
  tbl TEXT NOT NULL, row_id TEXT NOT NULL, op SMALLINT NOT NULL,
  row_version BIGINT, scopes JSONB NOT NULL, payload BYTEA,
  PRIMARY KEY(partition, commit_seq, idx)
);
CREATE INDEX sync_changes_by_table
  ON sync_changes(partition, commit_seq, tbl, idx);

CREATE TABLE sync_change_scopes(
  partition TEXT NOT NULL, tbl TEXT NOT NULL,
  var TEXT NOT NULL, value TEXT NOT NULL, commit_seq BIGINT NOT NULL,
  PRIMARY KEY(partition, tbl, var, value, commit_seq)
);

CREATE TABLE sync_push_results(
  partition TEXT NOT NULL, client_id TEXT NOT NULL,
  client_commit_id TEXT NOT NULL, result JSONB NOT NULL,
  PRIMARY KEY(partition, client_id, client_commit_id)
);

CREATE TABLE sync_reactions(
  partition TEXT NOT NULL, idempotency_key TEXT NOT NULL,
  type TEXT NOT NULL, version INTEGER NOT NULL, payload JSONB NOT NULL,
  source_client_id TEXT NOT NULL, source_client_commit_id TEXT NOT NULL,
  source_commit_seq BIGINT NOT NULL, created_at_ms BIGINT NOT NULL,
  available_at_ms BIGINT NOT NULL, status TEXT NOT NULL,
  attempts INTEGER NOT NULL, max_attempts INTEGER NOT NULL,
  lease_owner TEXT, lease_expires_at_ms BIGINT, completed_at_ms BIGINT,
  last_failure JSONB,
  PRIMARY KEY(partition, idempotency_key),
  CHECK(status IN ('pending', 'leased', 'completed', 'dead-letter'))
);
CREATE INDEX sync_reactions_due
  ON sync_reactions(partition, status, available_at_ms, created_at_ms, idempotency_key);
CREATE INDEX sync_reactions_lease
  ON sync_reactions(partition, status, lease_expires_at_ms);
CREATE INDEX sync_reactions_completed
  ON sync_reactions(partition, status, completed_at_ms, idempotency_key);
CREATE INDEX sync_reactions_dead_letter
  ON sync_reactions(partition, status, available_at_ms, idempotency_key);

CREATE TABLE sync_clients(
  partition TEXT NOT NULL, client_id TEXT NOT NULL, actor_id TEXT NOT NULL,
  wire_version INTEGER NOT NULL DEFAULT 1,
  cursor BIGINT NOT NULL, subscriptions JSONB NOT NULL,
  updated_at_ms BIGINT NOT NULL,
  PRIMARY KEY(partition, client_id)
);

CREATE TABLE sync_blob_refs(
  partition TEXT NOT NULL, tbl TEXT NOT NULL, row_id TEXT NOT NULL,
  blob_id TEXT NOT NULL,
  PRIMARY KEY(partition, tbl, row_id, blob_id)
);
CREATE INDEX sync_blob_refs_by_blob
  ON sync_blob_refs(partition, blob_id);

CREATE TABLE sync_tombstones(
  partition TEXT NOT NULL, tbl TEXT NOT NULL, row_id TEXT NOT NULL,
  commit_seq BIGINT NOT NULL,
  PRIMARY KEY(partition, tbl, row_id)
);

CREATE TABLE sync_schema_meta(
  id INTEGER PRIMARY KEY CHECK (id = 1),
  schema_version BIGINT NOT NULL,
  layouts TEXT NOT NULL DEFAULT '{}'
);

-- Migration barrier (RFC 0007): one row per (partition, projection) being
-- backfilled; owner_epoch fences out stale workers, watermark is the commit
-- seq the projection is known to cover.
CREATE TABLE sync_backfill_checkpoints(
  partition TEXT NOT NULL, name TEXT NOT NULL,
  schema_version INTEGER NOT NULL,
  state TEXT NOT NULL CHECK(state IN ('declared','backfilling','activated')),
  watermark BIGINT NOT NULL DEFAULT 0,
  owner_epoch BIGINT NOT NULL DEFAULT 0,
  observed_rows BIGINT NOT NULL DEFAULT 0,
  updated_at_ms BIGINT NOT NULL,
  PRIMARY KEY(partition, name)
);

-- The lowest writer_version a commit of the partition may carry; enforced by
-- the sync_commits_writer_fence trigger. No row: no barrier.
CREATE TABLE sync_writer_fence(
  partition TEXT PRIMARY KEY,
  required_writer_version INTEGER NOT NULL
);

-- +goose Down
DROP TABLE sync_writer_fence;
DROP TABLE sync_backfill_checkpoints;
DROP TABLE sync_schema_meta;
DROP TABLE sync_tombstones;
DROP TABLE sync_blob_refs;
DROP TABLE sync_clients;
DROP TABLE sync_reactions;
DROP TABLE sync_push_results;
DROP TABLE sync_change_scopes;
DROP TABLE sync_changes;
DROP TABLE sync_commits;
DROP TABLE sync_row_scopes;
DROP TABLE sync_partition_registry;
DROP TABLE sync_partitions;
