-- Records what the migrations installed (sync_catalog_snapshot()) as the
-- state sync_security_audit() compares the database with: every later
-- migration that changes a function, a grant, an owner or a trigger calls
-- it as its last statement, in Up and in Down. Owner only: no role is
-- granted it (a caller who could run it could bless a replaced function).
-- A DBA who changes the catalog on purpose runs it as the owner to accept
-- the change. Returns the number of objects recorded.
CREATE OR REPLACE FUNCTION sync_record_installed_catalog()
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
DECLARE
  recorded integer;
BEGIN
  -- Two recorders at once would each delete and insert the whole record.
  LOCK TABLE sync_installed_catalog IN EXCLUSIVE MODE;
  DELETE FROM sync_installed_catalog;
  INSERT INTO sync_installed_catalog (kind, object, owner, acl, definition, state)
  SELECT s.kind, s.object, s.owner, s.acl, s.definition, s.state FROM sync_catalog_snapshot() s;
  GET DIAGNOSTICS recorded = ROW_COUNT;
  RETURN recorded;
END;
$$;
REVOKE ALL ON FUNCTION sync_record_installed_catalog() FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
COMMENT ON FUNCTION sync_record_installed_catalog() IS 'Record the installed catalog (sync_catalog_snapshot) that sync_security_audit compares with; every migration ends with it. Owner only. Returns the number of objects recorded.';
-- Example:
--   SELECT sync_record_installed_catalog();  -- as the owner, after a deliberate change
