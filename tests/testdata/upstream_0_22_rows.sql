-- What an upstream server wrote into tests/testdata/upstream_0_22.sql's
-- tables after a few pushes: two commits of partition p1 (the second deletes
-- nothing and edits t1), their changes, scopes and push results, a client, a
-- reaction, a blob reference, the schema marker and the todos rows.
INSERT INTO sync_partitions VALUES ('p1', 2, 0);
INSERT INTO sync_partition_registry VALUES ('p1', 'e1', false, 1700000000000);
INSERT INTO sync_commits VALUES
  ('p1', 1, 'c1', 'cc1', 'alice', 1700000000001),
  ('p1', 2, 'c1', 'cc2', 'alice', 1700000000002);
INSERT INTO sync_changes VALUES
  ('p1', 1, 0, 'todos', 't1', 1, 1, '{"owner": "alice"}', '\x7b7d'),
  ('p1', 1, 1, 'todos', 't2', 1, 1, '{"owner": "alice"}', '\x7b7d'),
  ('p1', 2, 0, 'todos', 't1', 1, 2, '{"owner": "alice"}', '\x7b7d');
INSERT INTO sync_change_scopes VALUES
  ('p1', 'todos', 'owner', 'alice', 1),
  ('p1', 'todos', 'owner', 'alice', 2);
INSERT INTO sync_row_scopes VALUES
  ('p1', 'todos', 'owner', 'alice', 't1'),
  ('p1', 'todos', 'owner', 'alice', 't2');
INSERT INTO sync_push_results VALUES
  ('p1', 'c1', 'cc1', '{"status": "applied", "commitSeq": 1}'),
  ('p1', 'c1', 'cc2', '{"status": "applied", "commitSeq": 2}');
INSERT INTO sync_reactions (partition, idempotency_key, type, version, payload, source_client_id,
  source_client_commit_id, source_commit_seq, created_at_ms, available_at_ms, status, attempts, max_attempts)
  VALUES ('p1', 'r1', 'notify', 1, '{}', 'c1', 'cc1', 1, 1700000000001, 1700000000001, 'pending', 0, 5);
INSERT INTO sync_clients VALUES ('p1', 'c1', 'alice', 1, 2, '[]', 1700000000002);
INSERT INTO sync_blob_refs VALUES ('p1', 'todos', 't1', 'b1');
INSERT INTO sync_schema_meta VALUES (1, 1, '{"todos": 1}');
INSERT INTO todos VALUES
  ('t1', 'milk', false, 'p1', 2, 1700000000002),
  ('t2', 'eggs', true, 'p1', 1, 1700000000001);
