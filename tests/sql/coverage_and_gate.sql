-- pgTAP: the coverage check and the serve gate.
BEGIN;
SELECT plan(17);

SELECT is(sync_source_coverage_seq('p1', ARRAY['todos']), 0::bigint, 'no changes: coverage seq 0');
-- A restored log (triggers off for the bulk load, as pg_restore writes it).
SET LOCAL session_replication_role = replica;
INSERT INTO sync_changes VALUES
  ('p1', 3, 0, 'todos', 'r1', 1, 1, '{}', NULL),
  ('p1', 5, 0, 'notes', 'r2', 1, 1, '{}', NULL),
  ('p1', 7, 0, 'todos', 'r3', 1, 1, '{}', NULL),
  ('p2', 9, 0, 'todos', 'r4', 1, 1, '{}', NULL);
SET LOCAL session_replication_role = origin;
SELECT is(sync_source_coverage_seq('p1', ARRAY['todos']), 7::bigint, 'coverage seq is the max seq of the sources');
SELECT is(sync_source_coverage_seq('p1', ARRAY['notes', 'todos']), 7::bigint, 'several sources');
SELECT is(sync_source_coverage_seq('p1', ARRAY['notes']), 5::bigint, 'per table');
SELECT is(sync_source_coverage_seq('p1', '{}'), 0::bigint, 'an empty list covers nothing');

SELECT is(sync_source_changes_above('p1', ARRAY['todos'], 6), 'changed', 'a change above seq: changed');
SELECT is(sync_source_changes_above('p1', ARRAY['todos'], 7), 'clean', 'nothing above seq: clean');
SELECT is(sync_source_changes_above('p1', ARRAY['notes'], 5), 'clean', 'other tables are ignored');
SELECT is(sync_source_changes_above('p1', '{}', 0), 'clean', 'an empty list is clean');
SET LOCAL session_replication_role = replica;
INSERT INTO sync_partitions VALUES ('p1', 9, 8);
SET LOCAL session_replication_role = origin;
SELECT is(sync_source_changes_above('p1', ARRAY['todos'], 7), 'unverifiable', 'pruned past seq: unverifiable');
SELECT is(sync_source_changes_above('p1', ARRAY['todos'], 6), 'changed', 'a visible change still says changed');
SELECT is(sync_source_changes_above('p1', ARRAY['todos'], 8), 'clean', 'at the horizon: clean');

-- The serve gate.
SELECT results_eq($$SELECT * FROM sync_serve_gate('p1', 2)$$,
  $$VALUES (0::bigint, NULL::text, '[]'::jsonb)$$, 'empty: version 0, unregistered, nothing pending');
INSERT INTO sync_schema_meta VALUES (1, 2, '{"todos": [], "lists": []}');
INSERT INTO sync_partition_registry VALUES ('p1', 'epoch-1', false, 0);
SELECT sync_declare_checkpoint('p2', 'b', 2);
SELECT sync_declare_checkpoint('p1', 'a', 2);
SELECT sync_declare_checkpoint('p0', 'later', 3);
SELECT sync_declare_checkpoint('p4', 'done', 2);
SELECT sync_claim_checkpoint('p4', 'done', 2);
SELECT sync_activate_checkpoint('p4', 'done', 1, 0, ARRAY['lists']);
SELECT results_eq($$SELECT * FROM sync_serve_gate('p1', 2)$$,
  $$VALUES (2::bigint, 'epoch-1'::text, '[{"partition": "p1", "name": "a"}, {"partition": "p2", "name": "b"}]'::jsonb)$$,
  'gate: stored version, epoch, pending of the running version ordered by partition, name');
SELECT results_eq($$SELECT pending FROM sync_serve_gate('p3', 3)$$,
  $$VALUES ('[{"partition": "p0", "name": "later"}]'::jsonb)$$, 'pending is limited to the running version');
SELECT is((SELECT log_epoch FROM sync_serve_gate('p3', 2)), NULL, 'an unregistered partition has no epoch');
SELECT throws_ok($$SELECT * FROM sync_serve_gate('', 2)$$, '22023', NULL, 'an empty partition is refused');

SELECT * FROM finish();
ROLLBACK;
