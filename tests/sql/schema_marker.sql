-- pgTAP: the marker rules (sync_check_schema_version, which the bump
-- sync_set_schema_version runs too), "pending" (sync_pending_checkpoints)
-- and "not declared" (sync_first_undeclared_checkpoint). Every refusal
-- changes nothing.
BEGIN;
SELECT plan(52);

CREATE TEMP TABLE marker_before AS SELECT * FROM sync_schema_meta;
CREATE FUNCTION pg_temp.marker_unchanged() RETURNS boolean LANGUAGE sql AS $$
  SELECT NOT EXISTS (SELECT * FROM sync_schema_meta EXCEPT SELECT * FROM marker_before)
     AND NOT EXISTS (SELECT * FROM marker_before EXCEPT SELECT * FROM sync_schema_meta)
$$;

-- No marker yet.
SELECT is(sync_check_schema_version(1, '{}'), 'absent', 'no marker: absent');

-- The marker at version 2: todos (id text not null, title text not null,
-- owner_id text null) and lists (id text not null).
SELECT sync_begin_schema_change();
SELECT sync_set_schema_version(2, '{"todos": [{"name": "id", "type": "string", "nullable": false},
  {"name": "title", "type": "string", "nullable": false}, {"name": "owner_id", "type": "string", "nullable": true}],
  "lists": [{"name": "id", "type": "string", "nullable": false}]}');
DELETE FROM marker_before;
INSERT INTO marker_before SELECT * FROM sync_schema_meta;

SELECT is(sync_check_schema_version(3, '{}'), 'older', 'a lower stored version: older');
SELECT is(sync_check_schema_version(2, '{"lists": [{"name": "id", "type": "string", "nullable": false}],
  "todos": [{"name": "id", "type": "string", "nullable": false}, {"name": "title", "type": "string", "nullable": false},
  {"name": "owner_id", "nullable": true, "type": "string"}]}'), 'same',
  'same version, same layouts (another key order, another text): same');

-- The stored version is newer.
SELECT throws_ok($$SELECT sync_check_schema_version(1, '{}')$$, '55000',
  'stored schema version 2 is newer than the configured schema (1) — refusing to run an older server against a migrated database',
  'a newer stored version is refused in the upstream words');
SELECT throws_ok($$SELECT sync_set_schema_version(1, '{}')$$, '55000',
  'stored schema version 2 is newer than the configured schema (1) — refusing to run an older server against a migrated database',
  '... and a DBA lowering the marker gets the same words');
SELECT ok(pg_temp.marker_unchanged(), '... and the marker is unchanged');

-- Same version, the layouts differ.
SELECT throws_ok($$SELECT sync_check_schema_version(2, '{"lists": [{"name": "id", "type": "string", "nullable": false}],
  "todos": [{"name": "id", "type": "string", "nullable": false}, {"name": "title", "type": "json", "nullable": false},
  {"name": "owner_id", "type": "string", "nullable": true}]}')$$, '55000',
  'stored schema layouts disagree with the configured schema at version 2 (table "todos" column "title") — refusing to serve a database whose stored rows the running code cannot decode',
  'a column of another type');
SELECT throws_ok($$SELECT sync_check_schema_version(2, '{"lists": [{"name": "id", "type": "string", "nullable": false}],
  "todos": [{"name": "id", "type": "string", "nullable": false}, {"name": "title", "type": "string", "nullable": false},
  {"name": "owner_id", "type": "string", "nullable": false}]}')$$, '55000',
  'stored schema layouts disagree with the configured schema at version 2 (table "todos" column "owner_id") — refusing to serve a database whose stored rows the running code cannot decode',
  'a column of another nullability');
SELECT throws_ok($$SELECT sync_check_schema_version(2, '{"lists": [{"name": "id", "type": "string", "nullable": false}],
  "todos": [{"name": "id", "type": "string", "nullable": false}, {"name": "name", "type": "string", "nullable": false},
  {"name": "owner_id", "type": "string", "nullable": true}]}')$$, '55000',
  'stored schema layouts disagree with the configured schema at version 2 (table "todos" column "name") — refusing to serve a database whose stored rows the running code cannot decode',
  'a column of another name (the configured name is named)');
SELECT throws_ok($$SELECT sync_check_schema_version(2, '{"lists": [{"name": "id", "type": "string", "nullable": false}],
  "todos": [{"name": "id", "type": "string", "nullable": false}, {"name": "title", "type": "string", "nullable": false},
  {"name": "owner_id", "type": "string", "nullable": true}, {"name": "due", "type": "integer", "nullable": true}]}')$$, '55000',
  'stored schema layouts disagree with the configured schema at version 2 (table "todos" column "due") — refusing to serve a database whose stored rows the running code cannot decode',
  'an extra configured column');
SELECT throws_ok($$SELECT sync_check_schema_version(2, '{"lists": [{"name": "id", "type": "string", "nullable": false}],
  "todos": [{"name": "id", "type": "string", "nullable": false}, {"name": "title", "type": "string", "nullable": false}]}')$$, '55000',
  'stored schema layouts disagree with the configured schema at version 2 (table "todos" column "owner_id") — refusing to serve a database whose stored rows the running code cannot decode',
  'a stored column the configured schema lacks (the stored name is named)');
SELECT throws_ok($$SELECT sync_check_schema_version(2, '{"todos": [{"name": "id", "type": "string", "nullable": false},
  {"name": "title", "type": "string", "nullable": false}, {"name": "owner_id", "type": "string", "nullable": true}]}')$$, '55000',
  'stored schema layouts disagree with the configured schema at version 2 (table "lists") — refusing to serve a database whose stored rows the running code cannot decode',
  'a stored table the configured schema lacks');
SELECT throws_ok($$SELECT sync_check_schema_version(2, '{"lists": [{"name": "id", "type": "string", "nullable": false}],
  "notes": [{"name": "id", "type": "string", "nullable": false}],
  "todos": [{"name": "id", "type": "string", "nullable": false}, {"name": "title", "type": "string", "nullable": false},
  {"name": "owner_id", "type": "string", "nullable": true}]}')$$, '55000',
  'stored schema layouts disagree with the configured schema at version 2 (table "notes" column "id") — refusing to serve a database whose stored rows the running code cannot decode',
  'a configured table the marker lacks');
SELECT throws_ok($$SELECT sync_check_schema_version(2, '{"a": [], "todos": [{"name": "id", "type": "integer", "nullable": false}],
  "lists": [{"name": "x", "type": "string", "nullable": false}]}')$$, '55000',
  'stored schema layouts disagree with the configured schema at version 2 (table "todos" column "id") — refusing to serve a database whose stored rows the running code cannot decode',
  'the first configured table in declaration order that differs is named (an empty one agrees with a missing one)');
SELECT throws_ok($$SELECT sync_set_schema_version(2, '{"lists": [{"name": "id", "type": "string", "nullable": false}],
  "todos": [{"name": "id", "type": "string", "nullable": false}, {"name": "title", "type": "json", "nullable": false},
  {"name": "owner_id", "type": "string", "nullable": true}]}')$$, '55000',
  'stored schema layouts disagree with the configured schema at version 2 (table "todos" column "title") — refusing to serve a database whose stored rows the running code cannot decode',
  'a DBA rewriting the marker at the same version with other layouts gets the same words');
SELECT ok(pg_temp.marker_unchanged(), '... and the marker is unchanged');

-- Arguments: 22023, nothing read or written.
SELECT throws_ok($$SELECT sync_check_schema_version(NULL, '{}')$$, '22023', NULL, 'a NULL version is refused');
SELECT throws_ok($$SELECT sync_check_schema_version(0, '{}')$$, '22023', NULL, 'version 0 is refused');
SELECT throws_ok($$SELECT sync_check_schema_version(2147483648, '{}')$$, '22023', NULL, 'a version above 2^31-1 is refused');
SELECT throws_ok($$SELECT sync_check_schema_version(2, NULL)$$, '22023', NULL, 'NULL layouts are refused');
SELECT throws_ok($$SELECT sync_check_schema_version(2, '[]')$$, '22023', NULL, 'layouts that are not an object are refused');
SELECT throws_ok($$SELECT sync_check_schema_version(2, '{"todos": [{"name": "id", "type": "string"}]}')$$, '22023', NULL,
  'a column without nullable is refused');
SELECT throws_ok($$SELECT sync_check_schema_version(2, '{"": []}')$$, '22023', NULL, 'an empty table name is refused');
SELECT throws_ok($$SELECT sync_check_schema_version(2, '{"todos": [{"name": "id", "type": "text", "nullable": false}]}')$$, '22023',
  'invalid argument: layouts["todos"] column "id" has type "text", which is not a row-codec type (string, integer, float, boolean, json, bytes, blob_ref, crdt)',
  'a Postgres type name is not a codec type');
SELECT throws_ok($$SELECT sync_set_schema_version(3, '{"t": [], "t": []}')$$, '22023', 'invalid argument: layouts name table "t" twice',
  'a table named twice is refused');
SELECT throws_ok($$SELECT sync_set_schema_version(3, '{"todos": [{"name": "id", "type": "string", "nullable": false}]}')$$, '55000',
  'the schema removed columns — only appending nullable columns is supported; table "todos" keeps 1 of its 3 stored columns',
  'a bump that removes columns is refused in upstream''s words');
SELECT throws_ok($$SELECT sync_set_schema_version(2, '{"todos": 1}')$$, '22023', NULL, '... and by the bump alike');
SELECT ok(pg_temp.marker_unchanged(), '... and the marker is unchanged');

-- A later version is written; the same layouts again are a no-op.
SELECT lives_ok($$SELECT sync_set_schema_version(3, '{"t": [{"name": "id", "type": "string", "nullable": false}]}')$$,
  'a higher version is written');
SELECT lives_ok($$SELECT sync_set_schema_version(3, '{"t": [{"type": "string", "name": "id", "nullable": false}]}')$$,
  'the same version with the same layouts is accepted');
SELECT is((SELECT schema_version FROM sync_schema_meta), 3::bigint, 'the marker is at 3');

-- A stored marker another writer left unreadable disagrees with every
-- configured schema; an empty one is an empty object.
UPDATE sync_schema_meta SET layouts = '{"t": [';
SELECT throws_ok($$SELECT sync_check_schema_version(3, '{"t": [{"name": "id", "type": "string", "nullable": false}]}')$$, '55000',
  'stored schema layouts disagree with the configured schema at version 3 (the stored layouts are not a JSON object) — refusing to serve a database whose stored rows the running code cannot decode',
  'stored layouts that are not JSON disagree');
UPDATE sync_schema_meta SET layouts = '';
SELECT is(sync_check_schema_version(3, '{}'), 'same', 'empty stored layouts are no tables');

-- Pending: every checkpoint that is not activated.
INSERT INTO sync_backfill_checkpoints (partition, name, schema_version, state, updated_at_ms) VALUES
  ('p1', 'a', 3, 'declared', 0), ('p1', 'b', 3, 'activated', 0), ('p2', 'a', 3, 'backfilling', 0),
  ('p2', 'b', 3, 'declared', 0), ('p3', 'a', 2, 'declared', 0);
SELECT results_eq($$SELECT partition, name, schema_version FROM sync_pending_checkpoints ORDER BY 1, 2$$,
  $$VALUES ('p1'::text, 'a'::text, 3), ('p2', 'a', 3), ('p2', 'b', 3), ('p3', 'a', 2)$$,
  'sync_pending_checkpoints: the checkpoints that are not activated');

-- Not declared.
SELECT results_eq($$SELECT * FROM sync_first_undeclared_checkpoint(3)$$, $$VALUES ('p1'::text, 'a'::text)$$,
  'nothing declared declares nothing: the first pending by (partition, name)');
SELECT results_eq($$SELECT * FROM sync_first_undeclared_checkpoint(3, '{a}')$$, $$VALUES ('p2'::text, 'b'::text)$$,
  'a name declares it in every partition');
SELECT results_eq($$SELECT * FROM sync_first_undeclared_checkpoint(3, '{}', '{p1}', '{a}')$$, $$VALUES ('p2'::text, 'a'::text)$$,
  'a pair declares one partition only');
SELECT results_eq($$SELECT * FROM sync_first_undeclared_checkpoint(3, '{b}', '{p1,p2}', '{a,a}')$$,
  $$VALUES (NULL::text, NULL::text)$$, 'all declared: one row of NULLs');
SELECT results_eq($$SELECT * FROM sync_first_undeclared_checkpoint(3, '{}', '{p2}', '{b}')$$, $$VALUES ('p1'::text, 'a'::text)$$,
  'a pair of another partition declares nothing here');
SELECT results_eq($$SELECT * FROM sync_first_undeclared_checkpoint(2)$$, $$VALUES ('p3'::text, 'a'::text)$$,
  'only the given version');
SELECT results_eq($$SELECT * FROM sync_first_undeclared_checkpoint(9)$$, $$VALUES (NULL::text, NULL::text)$$,
  'a version without checkpoints: none');
SELECT results_eq($$SELECT checkpoint_partition, checkpoint_name FROM sync_serve_check('p9', 3, NULL, '{a}')$$,
  $$VALUES ('p2'::text, 'b'::text)$$, 'sync_serve_check names what sync_first_undeclared_checkpoint finds');

-- Arguments: 22023.
SELECT throws_ok($$SELECT * FROM sync_first_undeclared_checkpoint(NULL)$$, '22023', NULL, 'a NULL version is refused');
SELECT throws_ok($$SELECT * FROM sync_first_undeclared_checkpoint(-1)$$, '22023', NULL, 'a negative version is refused');
SELECT throws_ok($$SELECT * FROM sync_first_undeclared_checkpoint(3, NULL)$$, '22023', NULL, 'NULL declared_names are refused');
SELECT throws_ok($$SELECT * FROM sync_first_undeclared_checkpoint(3, '{}', NULL, '{}')$$, '22023', NULL,
  'NULL declared_partitions are refused');
SELECT throws_ok($$SELECT * FROM sync_first_undeclared_checkpoint(3, '{}', '{}', NULL)$$, '22023', NULL,
  'NULL declared_partition_names are refused');
SELECT throws_ok($$SELECT * FROM sync_first_undeclared_checkpoint(3, ARRAY[NULL])$$, '22023', NULL,
  'a NULL name is refused');
SELECT throws_ok($$SELECT * FROM sync_first_undeclared_checkpoint(3, '{}', ARRAY[NULL], '{a}')$$, '22023', NULL,
  'a NULL pair partition is refused');
SELECT throws_ok($$SELECT * FROM sync_first_undeclared_checkpoint(3, '{}', '{p1}', ARRAY[NULL])$$, '22023', NULL,
  'a NULL pair name is refused');
SELECT throws_ok($$SELECT * FROM sync_first_undeclared_checkpoint(3, '{}', '{p1,p2}', '{a}')$$, '22023', NULL,
  'pair arrays of different lengths are refused');
SELECT throws_ok($$SELECT sync_assert_declarations('{}', '{p1}', '{}')$$, '22023', NULL,
  'sync_assert_declarations refuses them alone');

SELECT * FROM finish();
ROLLBACK;
