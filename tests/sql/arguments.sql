-- pgTAP: bad arguments fail with invalid_parameter_value and change nothing.
BEGIN;
SELECT plan(20);

SELECT throws_ok($$SELECT sync_declare_checkpoint(NULL, 'n', 1)$$, '22023', 'invalid argument: partition must be a non-empty string', 'NULL partition');
SELECT throws_ok($$SELECT sync_declare_checkpoint('', 'n', 1)$$, '22023', 'invalid argument: partition must be a non-empty string', 'empty partition');
SELECT throws_ok($$SELECT sync_declare_checkpoint('p', NULL, 1)$$, '22023', 'invalid argument: name must be a non-empty string', 'NULL name');
SELECT throws_ok($$SELECT sync_declare_checkpoint('p', '', 1)$$, '22023', 'invalid argument: name must be a non-empty string', 'empty name');
SELECT throws_ok($$SELECT sync_declare_checkpoint('p', repeat('x', 513), 1)$$, '22023', 'invalid argument: name is 513 characters long; the limit is 512', 'over-long name');
SELECT lives_ok($$SELECT sync_declare_checkpoint('p', repeat('x', 512), 1)$$, 'a 512-character name is fine');
SELECT throws_ok($$SELECT sync_declare_checkpoint('p', 'n', 0)$$, '22023', 'invalid argument: schema_version must be at least 1, got 0', 'version 0');
SELECT throws_ok($$SELECT sync_declare_checkpoint('p', 'n', NULL)$$, '22023', 'invalid argument: schema_version must be at least 1, got NULL', 'NULL version');
SELECT throws_ok($$SELECT sync_claim_checkpoint('p', 'n', -1)$$, '22023', NULL, 'claim: negative version');
SELECT throws_ok($$SELECT sync_advance_checkpoint('p', 'n', -1, 0, 0)$$, '22023', 'invalid argument: owner_epoch must be at least 0, got -1', 'advance: negative epoch');
SELECT throws_ok($$SELECT sync_advance_checkpoint('p', 'n', 0, -1, 0)$$, '22023', 'invalid argument: watermark must be at least 0, got -1', 'advance: negative watermark');
SELECT throws_ok($$SELECT sync_advance_checkpoint('p', 'n', 0, 0, -1)$$, '22023', 'invalid argument: observed_rows must be at least 0, got -1', 'advance: negative rows');
SELECT throws_ok($$SELECT sync_activate_checkpoint('p', 'n', 0, 0, NULL)$$, '22023', 'invalid argument: sources must be an array of table names, not NULL', 'activate: NULL sources');
SELECT throws_ok($$SELECT sync_activate_checkpoint('p', 'n', 0, 0, ARRAY['t', NULL])$$, '22023', 'invalid argument: source table must be a non-empty string', 'activate: a NULL source');
SELECT throws_ok($$SELECT sync_activate_checkpoint('p', 'n', 0, -5, '{}')$$, '22023', NULL, 'activate: negative watermark');
SELECT throws_ok($$SELECT sync_source_changes_above('p', NULL, 0)$$, '22023', NULL, 'coverage: NULL sources');
SELECT throws_ok($$SELECT sync_source_changes_above('p', '{t}', NULL)$$, '22023', NULL, 'coverage: NULL seq');
SELECT throws_ok($$SELECT sync_source_coverage_seq('', '{t}')$$, '22023', NULL, 'coverage seq: empty partition');
SELECT throws_ok($$SELECT * FROM sync_serve_gate('p', -1)$$, '22023', NULL, 'gate: negative version');
SELECT is((SELECT count(*) FROM sync_backfill_checkpoints WHERE name <> repeat('x', 512))
        + (SELECT count(*) FROM sync_partitions WHERE partition <> 'p'), 0::bigint,
  'refused calls wrote nothing (no checkpoint, no partition row but the accepted declare''s)');

SELECT * FROM finish();
ROLLBACK;
