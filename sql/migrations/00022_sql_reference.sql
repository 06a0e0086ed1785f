-- The SQL reference in the database (issue 19): a comment on every
-- function, table, view, sequence and trigger gosync creates or adopts, so
-- `\df+`, `\d+` and `\dd` explain them; an internal helper's comment starts
-- with "internal:". The function comments are verbatim copies of the
-- COMMENT lines of sql/functions/*.sql, the others of sql/comments.sql
-- (tests/functions_test.go proves the migrated database has exactly those).
-- A comment changes no column, so the upstream server's tables stay
-- compatible. Comments are not part of the installed-catalog record's
-- digests (pg_get_functiondef omits them); Up and Down still end by
-- recording the catalog, like every migration from 00020 on. Roles get no
-- comment: they are shared by every database of the cluster (one
-- database's Down would clear another's), and COMMENT ON ROLE needs
-- CREATEROLE, which 00006 does not require of the migrating role.

-- +goose Up
COMMENT ON FUNCTION sync_activate_checkpoint(text,text,bigint,bigint,text[],bigint) IS 'Activate a backfilling checkpoint under the partition lock: fence, owner, exact watermark, coverage check. Returns activated (final), stale or unverifiable; notifies sync_checkpoint_activated.';
COMMENT ON FUNCTION sync_advance_checkpoint(text,text,bigint,bigint,bigint,bigint) IS 'The owner''s compare-and-set of a backfilling checkpoint''s watermark (never down, never past the head, never over pruned history), in the projection batch''s transaction. True iff it moved.';
COMMENT ON FUNCTION sync_append_commit(text,text,text,text,bigint,bigint,text[],text[],smallint[],bigint[],jsonb[],bytea[]) IS 'Append one client commit (its changes, scopes and push result) at the partition''s head, stamped with writer_version; idempotent per (client_id, client_commit_id). Returns the push result as JSON.';
COMMENT ON FUNCTION sync_assert_declarations(text[],text[],text[]) IS 'internal: argument check of the gate functions: the three declaration arrays have no NULLs and the pair arrays one length, else 22023.';
COMMENT ON FUNCTION sync_assert_key(text,text) IS 'internal: argument check: a partition, checkpoint or table name is a non-empty string of at most 512 characters, else 22023.';
COMMENT ON FUNCTION sync_assert_nonnegative(text,bigint,bigint) IS 'internal: argument check: an epoch, watermark, count or seq is not NULL and not below min_value, else 22023.';
COMMENT ON FUNCTION sync_assert_now_ms(text,bigint) IS 'internal: argument check and default of every now_ms: NULL is the database clock; more than 5 minutes from it is 22023. Returns the stamp to store.';
COMMENT ON FUNCTION sync_assert_source_tables(text[]) IS 'internal: argument check of an activation''s sources: at least one table, each a table of the stored schema (sync_schema_meta layouts), else 22023.';
COMMENT ON FUNCTION sync_assert_sources(text[]) IS 'internal: argument check of a source table list: a non-NULL array of keys (empty is allowed), else 22023.';
COMMENT ON FUNCTION sync_begin_schema_change() IS 'First statement of a schema-bump transaction: the migration lock (EXCLUSIVE on sync_partitions), writers wait, reads go on. Bounded wait (5s without lock_timeout); a timeout (55P03) names the holders.';
COMMENT ON FUNCTION sync_catalog_snapshot() IS 'internal: the security-relevant state of every gosync object (functions, relations, triggers, owner-role members) in the shape of sync_installed_catalog, for the audit.';
COMMENT ON FUNCTION sync_changes_follow_commit() IS 'internal: AFTER INSERT trigger of sync_changes and sync_change_scopes: a change belongs to a commit this transaction appended, and its op is 1 or 2 (sync.storage.change_without_commit, change_op_rejected).';
COMMENT ON FUNCTION sync_check_schema_version(bigint,text) IS 'The schema-marker rules, read-only: absent, older or same for a configured (schema_version, layouts); a newer stored version or differing layouts raise 55000 in the upstream server''s words.';
COMMENT ON FUNCTION sync_claim_checkpoint(text,text,integer,bigint) IS 'Claim a declared (or backfilling) checkpoint for a backfill worker: a new owner_epoch, state backfilling. sync.storage.checkpoint_not_declared when missing, activated or at another version.';
COMMENT ON FUNCTION sync_claim_next_checkpoint(text,integer,bigint,bigint) IS 'A fleet worker''s claim: the next checkpoint of a projection that no live worker owns (declared, or its lease_ms expired), with SKIP LOCKED; no row when none is claimable.';
COMMENT ON FUNCTION sync_declare_checkpoint(text,text,integer,bigint) IS 'Declare a backfill checkpoint and raise its partition''s writer fence in one transaction (never re-declares, never lowers a fence). Returns the stored row.';
COMMENT ON FUNCTION sync_first_undeclared_checkpoint(integer,text[],text[],text[]) IS 'The first pending checkpoint of schema_version, by (partition, name), that the declarations do not cover; one row of NULLs when none. Index-driven.';
COMMENT ON FUNCTION sync_install_all_partitions(text[],integer,bigint) IS 'In a schema bump (READ COMMITTED, after sync_begin_schema_change): declare projections for every partition, now and later. Returns how many checkpoints were newly declared.';
COMMENT ON FUNCTION sync_install_checkpoint(text,text,integer,bigint) IS 'Insert one declared checkpoint and raise its fence in the caller''s transaction (sync_install_checkpoints for one pair), e.g. in a DBA''s schema bump.';
COMMENT ON FUNCTION sync_install_checkpoints(text[],text[],integer,bigint) IS 'Install many declarations (partitions[i], names[i]) and raise their fences, set-based, in the caller''s transaction. Returns how many rows were newly declared.';
COMMENT ON FUNCTION sync_lock_partition(text) IS 'internal: the partition row lock (SELECT ... FOR UPDATE on sync_partitions, inserting the row when missing) that pushes and activations take.';
COMMENT ON FUNCTION sync_lock_schema_marker() IS 'internal: sync_push''s FOR SHARE lock of the schema marker outside READ COMMITTED, so a snapshot older than a bump fails with 40001. Returns the stored version.';
COMMENT ON FUNCTION sync_now_ms() IS 'internal: the database clock in epoch milliseconds, the default of every now_ms argument.';
COMMENT ON FUNCTION sync_partition_created() IS 'internal: AFTER INSERT trigger of sync_partitions: a new partition gets the fence and the checkpoints declared for every partition (sync_all_partition_checkpoints).';
COMMENT ON FUNCTION sync_partition_registry_guard() IS 'internal: BEFORE INSERT OR UPDATE trigger of sync_partition_registry (fires only through its WHEN): refuses a last_authenticated_at_ms that is negative or more than 5 minutes ahead of the database clock (22023).';
COMMENT ON FUNCTION sync_partitions_guard() IS 'internal: BEFORE INSERT/UPDATE trigger of sync_partitions (through WHEN): max_commit_seq moves by one allocation, the horizon never falls nor passes the head, touches are the owner''s (sync.storage.partition_seq_rejected).';
COMMENT ON FUNCTION sync_prune_log(text,bigint) IS 'Prune a partition''s log through through_seq (commits, changes, change scopes) and raise horizon_seq to it, under the partition lock. Returns the new horizon.';
COMMENT ON FUNCTION sync_push(text,integer,text,text[],text[],text[],text,text,text,bigint,text[],text[],smallint[],bigint[],jsonb[],bytea[]) IS 'A push in one round trip: partition lock, the refusal rule (sync_serve_check), then sync_append_commit at the running schema version. One row: refusal NULL and result, or the refusal and result NULL.';
COMMENT ON FUNCTION sync_record_installed_catalog() IS 'Record the installed catalog (sync_catalog_snapshot) that sync_security_audit compares with; every migration ends with it. Owner only. Returns the number of objects recorded.';
COMMENT ON FUNCTION sync_remove_checkpoint(text,text) IS 'Undo a mistaken declare: remove a checkpoint that is not activated and return it; the fence stays. sync.storage.checkpoint_activated or checkpoint_not_declared otherwise.';
COMMENT ON FUNCTION sync_rotate_log_epoch(text,text,bigint) IS 'Give a partition a new log epoch (epoch_required) and delete its client cursors, so clients re-bootstrap. Returns the registry row.';
COMMENT ON FUNCTION sync_schema_change_blockers() IS 'Who holds a lock the migration lock conflicts with: one row per session (pid) or prepared transaction (prepared_gid), with role, lock_modes and since.';
COMMENT ON FUNCTION sync_security_audit() IS 'The security posture for a DBA: one row per check (one per offending object when it fails). SELECT * FROM sync_security_audit() WHERE NOT ok; is empty when healthy.';
COMMENT ON FUNCTION sync_segment_expired(text,bigint) IS 'True when a segment minted at segment_schema_version is expired (sync.segment_expired): the partition has a checkpoint of a newer schema version.';
COMMENT ON FUNCTION sync_serve_check(text,integer,text,text[],text[],text[]) IS 'The refusal rule of one request, in one row: refusal NULL (serve), schema, epoch or checkpoint, the first that applies. Index-driven: same cost whatever is pending.';
COMMENT ON FUNCTION sync_serve_gate(text,integer) IS 'The serve gate''s raw inputs for DBAs: stored schema version, log epoch and every pending checkpoint of the running version (not for request paths: use sync_serve_check).';
COMMENT ON FUNCTION sync_set_schema_version(bigint,text) IS 'Write the schema marker inside a schema bump (after sync_begin_schema_change): never down; same layouts at the same version (the rules of sync_check_schema_version).';
COMMENT ON FUNCTION sync_source_changes_above(text,text[],bigint) IS 'Coverage check: changed (a source change above seq), unverifiable (none, but the log is pruned past seq) or clean.';
COMMENT ON FUNCTION sync_source_coverage_seq(text,text[]) IS 'The highest commit_seq of any change to the source tables in the partition, 0 when none: the watermark a backfill must reach.';
COMMENT ON FUNCTION sync_touch_partition(text,text,bigint) IS 'Register a partition on first use with its first log epoch (a fresh UUID unless given) and stamp its last authentication. Returns the registry row.';
COMMENT ON FUNCTION sync_xid_is_current(xid) IS 'internal: true when xid (a row version''s xmin) is the current transaction or one of its savepoints; the triggers carry its expression written out.';
COMMENT ON FUNCTION syncular_writer_fence() IS 'internal: BEFORE INSERT trigger of sync_commits: the writer fence (sync.storage.writer_fence_rejected) and head-only appends (sync.storage.commit_not_at_head), for every writer.';
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
COMMENT ON TABLE sync_backfill_checkpoints IS 'One projection being backfilled in one partition at a schema version: state declared, backfilling or activated (final), owner_epoch and watermark.';
COMMENT ON TABLE sync_writer_fence IS 'One partition''s writer fence: the lowest writer_version its commits may carry (raised by a declaration, never lowered).';
COMMENT ON TABLE sync_all_partition_checkpoints IS 'gosync''s: the one row (id 1) of projections declared for every partition, names[i] at schema_versions[i]; partitions created later get them too.';
COMMENT ON TABLE sync_installed_catalog IS 'gosync''s: one object as the migrations installed it (a function''s definition digest, owner and grants, a relation, a trigger, an owner-role member), which sync_security_audit compares with.';
COMMENT ON VIEW sync_barrier_status IS 'One row per backfill checkpoint: state, fence, log epoch, watermark, coverage and lag (0 once activated), for DBAs.';
COMMENT ON VIEW sync_barrier_summary IS 'Per schema version, projection and state: how many checkpoints, the slowest lag and the oldest update.';
COMMENT ON VIEW sync_pending_checkpoints IS 'The checkpoints that are not activated: the one definition of pending the gate functions read (served by the partial index sync_backfill_checkpoints_pending).';
COMMENT ON SEQUENCE sync_checkpoint_epoch_floor IS 'The highest owner_epoch of a removed checkpoint: later declares and claims start above it, so a removed row''s old owner never becomes valid again.';
COMMENT ON TRIGGER sync_commits_writer_fence ON sync_commits IS 'The writer fence and head-only appends for every writer (syncular_writer_fence).';
COMMENT ON TRIGGER sync_changes_follow_commit ON sync_changes IS 'A change belongs to a commit this transaction appended; its op is 1 or 2 (sync_changes_follow_commit).';
COMMENT ON TRIGGER sync_change_scopes_follow_commit ON sync_change_scopes IS 'A change scope belongs to a commit this transaction appended (sync_changes_follow_commit).';
COMMENT ON TRIGGER sync_partitions_guard_insert ON sync_partitions IS 'A new partition row starts at seq 0 or 1 with horizon 0: the WHEN matches only a row that does not, which sync_partitions_guard refuses.';
COMMENT ON TRIGGER sync_partitions_guard_update ON sync_partitions IS 'The WHEN matches a write that is not one allocation (head + 1) within the horizon rules; sync_partitions_guard refuses it unless it is the owner''s touch.';
COMMENT ON TRIGGER sync_partition_registry_guard ON sync_partition_registry IS 'A raw write of last_authenticated_at_ms is bounded like every clock argument: not negative, not more than 5 minutes ahead (sync_partition_registry_guard).';
COMMENT ON TRIGGER sync_partitions_created ON sync_partitions IS 'A new partition gets the fence and the checkpoints declared for every partition (sync_partition_created).';
SELECT sync_record_installed_catalog();

-- +goose Down
COMMENT ON FUNCTION sync_activate_checkpoint(text,text,bigint,bigint,text[],bigint) IS NULL;
COMMENT ON FUNCTION sync_advance_checkpoint(text,text,bigint,bigint,bigint,bigint) IS NULL;
COMMENT ON FUNCTION sync_append_commit(text,text,text,text,bigint,bigint,text[],text[],smallint[],bigint[],jsonb[],bytea[]) IS NULL;
COMMENT ON FUNCTION sync_assert_declarations(text[],text[],text[]) IS NULL;
COMMENT ON FUNCTION sync_assert_key(text,text) IS NULL;
COMMENT ON FUNCTION sync_assert_nonnegative(text,bigint,bigint) IS NULL;
COMMENT ON FUNCTION sync_assert_now_ms(text,bigint) IS NULL;
COMMENT ON FUNCTION sync_assert_source_tables(text[]) IS NULL;
COMMENT ON FUNCTION sync_assert_sources(text[]) IS NULL;
COMMENT ON FUNCTION sync_begin_schema_change() IS NULL;
COMMENT ON FUNCTION sync_catalog_snapshot() IS NULL;
COMMENT ON FUNCTION sync_changes_follow_commit() IS NULL;
COMMENT ON FUNCTION sync_check_schema_version(bigint,text) IS NULL;
COMMENT ON FUNCTION sync_claim_checkpoint(text,text,integer,bigint) IS NULL;
COMMENT ON FUNCTION sync_claim_next_checkpoint(text,integer,bigint,bigint) IS NULL;
COMMENT ON FUNCTION sync_declare_checkpoint(text,text,integer,bigint) IS NULL;
COMMENT ON FUNCTION sync_first_undeclared_checkpoint(integer,text[],text[],text[]) IS NULL;
COMMENT ON FUNCTION sync_install_all_partitions(text[],integer,bigint) IS NULL;
COMMENT ON FUNCTION sync_install_checkpoint(text,text,integer,bigint) IS NULL;
COMMENT ON FUNCTION sync_install_checkpoints(text[],text[],integer,bigint) IS NULL;
COMMENT ON FUNCTION sync_lock_partition(text) IS NULL;
COMMENT ON FUNCTION sync_lock_schema_marker() IS NULL;
COMMENT ON FUNCTION sync_now_ms() IS NULL;
COMMENT ON FUNCTION sync_partition_created() IS NULL;
COMMENT ON FUNCTION sync_partition_registry_guard() IS NULL;
COMMENT ON FUNCTION sync_partitions_guard() IS NULL;
COMMENT ON FUNCTION sync_prune_log(text,bigint) IS NULL;
COMMENT ON FUNCTION sync_push(text,integer,text,text[],text[],text[],text,text,text,bigint,text[],text[],smallint[],bigint[],jsonb[],bytea[]) IS NULL;
COMMENT ON FUNCTION sync_record_installed_catalog() IS NULL;
COMMENT ON FUNCTION sync_remove_checkpoint(text,text) IS NULL;
COMMENT ON FUNCTION sync_rotate_log_epoch(text,text,bigint) IS NULL;
COMMENT ON FUNCTION sync_schema_change_blockers() IS NULL;
COMMENT ON FUNCTION sync_security_audit() IS NULL;
COMMENT ON FUNCTION sync_segment_expired(text,bigint) IS NULL;
COMMENT ON FUNCTION sync_serve_check(text,integer,text,text[],text[],text[]) IS NULL;
COMMENT ON FUNCTION sync_serve_gate(text,integer) IS NULL;
COMMENT ON FUNCTION sync_set_schema_version(bigint,text) IS NULL;
COMMENT ON FUNCTION sync_source_changes_above(text,text[],bigint) IS NULL;
COMMENT ON FUNCTION sync_source_coverage_seq(text,text[]) IS NULL;
COMMENT ON FUNCTION sync_touch_partition(text,text,bigint) IS NULL;
COMMENT ON FUNCTION sync_xid_is_current(xid) IS NULL;
COMMENT ON FUNCTION syncular_writer_fence() IS NULL;
COMMENT ON TABLE sync_partitions IS NULL;
COMMENT ON TABLE sync_partition_registry IS NULL;
COMMENT ON TABLE sync_commits IS NULL;
COMMENT ON TABLE sync_changes IS NULL;
COMMENT ON TABLE sync_change_scopes IS NULL;
COMMENT ON TABLE sync_push_results IS NULL;
COMMENT ON TABLE sync_row_scopes IS NULL;
COMMENT ON TABLE sync_clients IS NULL;
COMMENT ON TABLE sync_blob_refs IS NULL;
COMMENT ON TABLE sync_tombstones IS NULL;
COMMENT ON TABLE sync_reactions IS NULL;
COMMENT ON TABLE sync_schema_meta IS NULL;
COMMENT ON TABLE sync_backfill_checkpoints IS NULL;
COMMENT ON TABLE sync_writer_fence IS NULL;
COMMENT ON TABLE sync_all_partition_checkpoints IS NULL;
COMMENT ON TABLE sync_installed_catalog IS NULL;
COMMENT ON VIEW sync_barrier_status IS NULL;
COMMENT ON VIEW sync_barrier_summary IS NULL;
COMMENT ON VIEW sync_pending_checkpoints IS NULL;
COMMENT ON SEQUENCE sync_checkpoint_epoch_floor IS NULL;
COMMENT ON TRIGGER sync_commits_writer_fence ON sync_commits IS NULL;
COMMENT ON TRIGGER sync_changes_follow_commit ON sync_changes IS NULL;
COMMENT ON TRIGGER sync_change_scopes_follow_commit ON sync_change_scopes IS NULL;
COMMENT ON TRIGGER sync_partitions_guard_insert ON sync_partitions IS NULL;
COMMENT ON TRIGGER sync_partitions_guard_update ON sync_partitions IS NULL;
COMMENT ON TRIGGER sync_partition_registry_guard ON sync_partition_registry IS NULL;
COMMENT ON TRIGGER sync_partitions_created ON sync_partitions IS NULL;
SELECT sync_record_installed_catalog();
