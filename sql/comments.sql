-- The comments on gosync's tables, views, sequences and triggers (a
-- function's comment is in its canonical file in sql/functions/), so `\d+`
-- and `\dd` explain every object in the database. The migrations carry these
-- statements verbatim (00022 first); tests/functions_test.go proves the
-- migrated database has exactly these comments. A comment changes no column:
-- the upstream server's tables stay compatible. One statement per line.
COMMENT ON TABLE sync_partitions IS 'One partition''s head: max_commit_seq (the last allocated commit seq) and horizon_seq (the log is pruned through it). Its row lock is the push lock.';
COMMENT ON TABLE sync_partition_registry IS 'One registered partition: its log_epoch (rotated by sync_rotate_log_epoch: clients re-bootstrap), epoch_required and last authentication.';
COMMENT ON TABLE sync_commits IS 'One client commit at (partition, commit_seq), stamped with writer_version (the writer''s schema version); appended only at the head, above the writer fence.';
COMMENT ON TABLE sync_changes IS 'One row change of a commit (idx = its position): table, row id, op (1 upsert, 2 delete), row version, scopes and payload.';
COMMENT ON TABLE sync_change_scopes IS 'One scope value (var, value) of a change to table tbl in commit commit_seq: the index pulls read by scope.';
COMMENT ON TABLE sync_push_results IS 'The stored answer to one client commit (client_id, client_commit_id): a replay returns it.';
COMMENT ON TABLE sync_row_scopes IS 'Upstream server state: one scope value (var, value) of a current row; gosync keeps its shape only.';
COMMENT ON TABLE sync_clients IS 'Upstream server state: one client of a partition with its actor, wire version, cursor and subscriptions; sync_rotate_log_epoch deletes them.';
COMMENT ON TABLE sync_blob_refs IS 'Upstream server state: one reference from a row to a blob; gosync keeps its shape only.';
COMMENT ON TABLE sync_tombstones IS 'Upstream storage shape: one deleted row and the commit seq of its delete; gosync keeps its shape only.';
COMMENT ON TABLE sync_reactions IS 'Upstream server state: one reaction (a job a commit queued) with its status, attempts and lease; gosync keeps its shape only.';
COMMENT ON TABLE sync_schema_meta IS 'The one schema marker row (id 1): the running schema_version and its table layouts (JSON). Written only in a schema bump (sync_set_schema_version).';
COMMENT ON TABLE sync_schema_layouts IS 'The layouts (sync_schema_meta.layouts) of every schema version the marker held since migration 00024 (tables: parsed, NULL when not JSON), recorded by the trigger sync_schema_meta_layouts or sync_record_schema_layouts: a change is decoded with its writer_version''s layouts (sync_layout_for).';
COMMENT ON TABLE sync_backfill_checkpoints IS 'One projection being backfilled in one partition at a schema version: state declared, backfilling or activated (final), owner_epoch and watermark.';
COMMENT ON TABLE sync_writer_fence IS 'One partition''s writer fence: the lowest writer_version its commits may carry (raised by a declaration, never lowered).';
COMMENT ON TABLE sync_all_partition_checkpoints IS 'gosync''s: the one row (id 1) of projections declared for every partition, names[i] at schema_versions[i]; partitions created later get them too.';
COMMENT ON TABLE sync_installed_catalog IS 'gosync''s: one object as the migrations installed it (a function''s definition digest, owner and grants, a relation, a trigger, an owner-role member), which sync_security_audit compares with.';
COMMENT ON VIEW sync_barrier_status IS 'One row per backfill checkpoint: state, fence, log epoch, watermark, coverage and lag (0 once activated), for DBAs.';
COMMENT ON VIEW sync_barrier_summary IS 'Per schema version, projection and state: how many checkpoints, the slowest lag and the oldest update.';
COMMENT ON VIEW sync_pending_checkpoints IS 'The checkpoints that are not activated: the one definition of pending the gate functions read (served by the partial index sync_backfill_checkpoints_pending).';
COMMENT ON SEQUENCE sync_checkpoint_epoch_floor IS 'The highest owner_epoch of a removed checkpoint: later declares and claims start above it, so a removed row''s old owner never becomes valid again.';
COMMENT ON TRIGGER sync_commits_writer_guard ON sync_commits IS 'gosync''s writer fence and head-only appends for every writer (sync_commits_writer_guard); an upstream boot does not replace it.';
COMMENT ON TRIGGER sync_commits_writer_fence ON sync_commits IS 'Upstream''s fence trigger (syncular_writer_fence): an upstream 0.23 boot drops and re-creates it; gosync''s rules are sync_commits_writer_guard.';
COMMENT ON TRIGGER sync_commits_deleted ON sync_commits IS 'Deleted commits raise their partition''s horizon to the highest deleted seq (sync_log_deleted).';
COMMENT ON TRIGGER sync_changes_deleted ON sync_changes IS 'Deleted changes raise their partition''s horizon to the highest deleted seq (sync_log_deleted).';
COMMENT ON TRIGGER sync_change_scopes_deleted ON sync_change_scopes IS 'Deleted change scopes raise their partition''s horizon to the highest deleted seq (sync_log_deleted).';
COMMENT ON TRIGGER sync_commits_truncated ON sync_commits IS 'A TRUNCATE raises every partition''s horizon to its head first (sync_log_deleted).';
COMMENT ON TRIGGER sync_changes_truncated ON sync_changes IS 'A TRUNCATE raises every partition''s horizon to its head first (sync_log_deleted).';
COMMENT ON TRIGGER sync_change_scopes_truncated ON sync_change_scopes IS 'A TRUNCATE raises every partition''s horizon to its head first (sync_log_deleted).';
COMMENT ON TRIGGER sync_changes_follow_commit ON sync_changes IS 'A change belongs to a commit this transaction appended; its op is 1 or 2 (sync_changes_follow_commit).';
COMMENT ON TRIGGER sync_change_scopes_follow_commit ON sync_change_scopes IS 'A change scope belongs to a commit this transaction appended (sync_changes_follow_commit).';
COMMENT ON TRIGGER sync_partitions_guard_insert ON sync_partitions IS 'A new partition row starts at seq 0 or 1 with horizon 0: the WHEN matches only a row that does not, which sync_partitions_guard refuses.';
COMMENT ON TRIGGER sync_partitions_guard_update ON sync_partitions IS 'The WHEN matches a write that is not one allocation (head + 1) within the horizon rules; sync_partitions_guard refuses it unless it is the owner''s touch.';
COMMENT ON TRIGGER sync_partition_registry_guard ON sync_partition_registry IS 'A raw write of last_authenticated_at_ms is bounded like every clock argument: not negative, not more than 5 minutes ahead (sync_partition_registry_guard).';
COMMENT ON TRIGGER sync_partitions_created ON sync_partitions IS 'A new partition gets the fence and the checkpoints declared for every partition (sync_partition_created).';
COMMENT ON TRIGGER sync_schema_meta_layouts ON sync_schema_meta IS 'Every marker write records its layouts under its version in sync_schema_layouts (sync_schema_layouts_record).';
