-- pgTAP: the refusal rule's truth table through sync_serve_check.
BEGIN;
SELECT plan(20);

SELECT results_eq($$SELECT * FROM sync_serve_check('p1', 2)$$,
  $$VALUES ('schema'::text, 0::bigint, NULL::text, NULL::text, NULL::text)$$,
  'no marker: schema refusal, stored version 0');

INSERT INTO sync_schema_meta VALUES (1, 2, '{}');
INSERT INTO sync_partition_registry VALUES ('p1', 'e1', false, 0);
SELECT results_eq($$SELECT * FROM sync_serve_check('p1', 3)$$,
  $$VALUES ('schema'::text, 2::bigint, 'e1'::text, NULL::text, NULL::text)$$, 'stored older than running: schema');
SELECT results_eq($$SELECT refusal FROM sync_serve_check('p1', 1)$$, $$VALUES ('schema'::text)$$, 'stored newer than running: schema');
SELECT results_eq($$SELECT * FROM sync_serve_check('p1', 2)$$,
  $$VALUES (NULL::text, 2::bigint, 'e1'::text, NULL::text, NULL::text)$$, 'nothing pending: open');
SELECT results_eq($$SELECT refusal FROM sync_serve_check('p1', 2, 'e0')$$, $$VALUES ('epoch'::text)$$, 'expected epoch mismatched: epoch');
SELECT results_eq($$SELECT refusal FROM sync_serve_check('p9', 2, 'e1')$$, $$VALUES ('epoch'::text)$$, 'expected epoch, unregistered partition: epoch');
SELECT results_eq($$SELECT refusal FROM sync_serve_check('p9', 2)$$, $$VALUES (NULL::text)$$, 'no expected epoch, unregistered partition: open');
SELECT results_eq($$SELECT refusal FROM sync_serve_check('p1', 2, 'e1')$$, $$VALUES (NULL::text)$$, 'expected epoch matches: open');

INSERT INTO sync_backfill_checkpoints (partition, name, schema_version, state, updated_at_ms) VALUES
  ('p1', 'm', 2, 'declared', 0), ('p1', 'k', 2, 'backfilling', 0),
  ('p2', 'b', 2, 'backfilling', 0), ('p3', 'a', 2, 'declared', 0),
  ('p0', 'z', 3, 'declared', 0), ('p0', 'c', 2, 'activated', 0);
SELECT results_eq($$SELECT refusal FROM sync_serve_check('p1', 2, 'e0', '{k,m}')$$, $$VALUES ('epoch'::text)$$, 'epoch before checkpoint');
SELECT results_eq($$SELECT * FROM sync_serve_check('p1', 2, NULL, '{a,b,k,m}', '{p1}', '{k}')$$,
  $$VALUES ('checkpoint'::text, 2::bigint, 'e1'::text, 'p1'::text, 'k'::text)$$,
  'own partition: refuses even when declared by name and pair, the lowest name');
SELECT results_eq($$SELECT checkpoint_partition, checkpoint_name FROM sync_serve_check('p2', 2)$$,
  $$VALUES ('p2'::text, 'b'::text)$$, 'own partition before a lower undeclared checkpoint elsewhere');
SELECT results_eq($$SELECT refusal, checkpoint_partition, checkpoint_name FROM sync_serve_check('p9', 2)$$,
  $$VALUES ('checkpoint'::text, 'p1'::text, 'k'::text)$$, 'fail closed: nothing declared, the first pending by (partition, name)');
SELECT results_eq($$SELECT refusal FROM sync_serve_check('p9', 2, NULL, '{a,b,k,m}')$$, $$VALUES (NULL::text)$$,
  'every pending name declared for all partitions: open (activated and other versions ignored)');
SELECT results_eq($$SELECT refusal FROM sync_serve_check('p9', 2, NULL, '{}', '{p1,p1,p2,p3}', '{k,m,b,a}')$$, $$VALUES (NULL::text)$$,
  'every pending pair declared: open');
SELECT results_eq($$SELECT checkpoint_partition, checkpoint_name FROM sync_serve_check('p9', 2, NULL, '{a,k,m}')$$,
  $$VALUES ('p2'::text, 'b'::text)$$, 'undeclared name elsewhere');
SELECT results_eq($$SELECT checkpoint_partition, checkpoint_name FROM sync_serve_check('p9', 2, NULL, '{a,k,m}', '{p3}', '{b}')$$,
  $$VALUES ('p2'::text, 'b'::text)$$, 'a pair declares its own partition only');
SELECT results_eq($$SELECT checkpoint_partition, checkpoint_name FROM sync_serve_check('p9', 2, NULL, '{b}', '{p1}', '{k}')$$,
  $$VALUES ('p1'::text, 'm'::text)$$, 'mixed: by name and by pair, the first undeclared remains');
SELECT results_eq($$SELECT refusal FROM sync_serve_check('p0', 3, NULL, '{}', '{}', '{}')$$, $$VALUES ('schema'::text)$$,
  'checkpoints of another version do not matter before the schema matches');
SELECT throws_ok($$SELECT * FROM sync_serve_check('', 2)$$, '22023', NULL, 'an empty partition is refused');
SELECT throws_ok($$SELECT * FROM sync_serve_check('p1', 2, NULL, '{}', '{p1}', '{}')$$, '22023', NULL,
  'pair arrays of different lengths are refused');

SELECT * FROM finish();
ROLLBACK;
