-- pgTAP: the security audit compares the catalog with what the migrations
-- recorded in sync_installed_catalog, one row per check or per object.
BEGIN;
SELECT plan(16);

SELECT has_table('sync_installed_catalog', 'the record of the installed catalog exists');
SELECT is(pg_get_function_result('sync_security_audit()'::regprocedure),
  'TABLE(check_name text, ok boolean, detail text, severity text, object text)',
  'the audit keeps its three columns first and adds severity and object');
SELECT is_empty($$SELECT * FROM sync_security_audit() WHERE NOT ok$$, 'a freshly migrated database audits clean');
SELECT is_empty($$SELECT * FROM sync_security_audit() WHERE ok = (severity = 'fail') OR severity NOT IN ('ok', 'warn', 'info', 'fail')$$,
  'ok is false exactly on severity fail');
SELECT is((SELECT severity FROM sync_security_audit() WHERE check_name = 'who can bypass the barrier'), 'info',
  'who can bypass the barrier is informational');
SELECT is((SELECT severity FROM sync_security_audit() WHERE check_name = 'max_prepared_transactions is 0'),
  CASE WHEN current_setting('max_prepared_transactions')::int > 0 THEN 'warn' ELSE 'ok' END,
  'max_prepared_transactions > 0 is a warning, not a failure');
SELECT ok((SELECT count(*) FROM sync_installed_catalog WHERE kind = 'function' AND state = 'security definer') >= 12,
  'every SECURITY DEFINER function of SECURITY.md is recorded as such');

SELECT is(has_table_privilege('sync_reader', 'sync_installed_catalog', 'SELECT'), true, 'sync_reader reads the record');
SELECT is(has_table_privilege('sync_admin', 'sync_installed_catalog', 'INSERT, UPDATE, DELETE, TRUNCATE'), false,
  'no sync role writes the record');
SELECT is(has_function_privilege('sync_admin', 'sync_record_installed_catalog()', 'EXECUTE'), false,
  'no sync role runs the recorder');
SELECT is(has_function_privilege('public', 'sync_record_installed_catalog()', 'EXECUTE'), false,
  'PUBLIC does not run the recorder');

-- A replaced helper is named by the definition check.
CREATE OR REPLACE FUNCTION sync_now_ms() RETURNS bigint LANGUAGE sql STABLE AS $$ SELECT 0::bigint $$;
SELECT results_eq($$SELECT object FROM sync_security_audit() WHERE NOT ok AND check_name = 'function definitions match the record'$$,
  $$VALUES ('sync_now_ms()'::text)$$, 'a replaced function is reported by name');

-- A disabled trigger is named by the trigger check.
ALTER TABLE sync_commits DISABLE TRIGGER sync_commits_writer_fence;
SELECT results_eq($$SELECT object FROM sync_security_audit() WHERE NOT ok AND check_name = 'triggers on the sync tables match the record'$$,
  $$VALUES ('sync_commits_writer_fence on sync_commits'::text)$$, 'a disabled trigger is reported by name');
ALTER TABLE sync_commits ENABLE TRIGGER sync_commits_writer_fence;

-- A GRANT EXECUTE to PUBLIC is named by the grants check.
GRANT EXECUTE ON FUNCTION sync_claim_next_checkpoint(text, integer, bigint, bigint) TO PUBLIC;
SELECT results_eq($$SELECT object FROM sync_security_audit() WHERE NOT ok AND check_name = 'grants match the record'$$,
  $$SELECT 'sync_claim_next_checkpoint(' || pg_get_function_identity_arguments('sync_claim_next_checkpoint(text, integer, bigint, bigint)'::regprocedure) || ')'$$,
  'a grant to PUBLIC is reported by name');
REVOKE EXECUTE ON FUNCTION sync_claim_next_checkpoint(text, integer, bigint, bigint) FROM PUBLIC;

-- The owner accepts a deliberate change by recording it again (the
-- replaced function pinned again: the pin check reads the catalog as is).
ALTER FUNCTION sync_now_ms() SET search_path = pg_catalog, public, pg_temp;
SELECT ok(sync_record_installed_catalog() > 0, 'the owner re-records the catalog');
SELECT is_empty($$SELECT * FROM sync_security_audit() WHERE NOT ok$$, 'after recording, the audit is clean again');

SELECT * FROM finish();
ROLLBACK;
