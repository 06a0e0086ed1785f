-- The function of upstream's trigger sync_commits_writer_fence. An upstream
-- 0.23 server re-creates it with its own body at every boot (a fence check
-- reading unqualified names) and drops and re-creates that trigger, so
-- gosync keeps nothing here: its fence and head rule are
-- sync_commits_writer_guard(), fired by its own trigger, which a boot leaves
-- alone. gosync's body checks nothing (the guard does, once); after an
-- upstream boot upstream's body checks the fence a second time, which is
-- harmless (BENCHMARKS.md has the cost). sync_security_audit() names which
-- body is installed, and migrate up restores this one.
CREATE OR REPLACE FUNCTION syncular_writer_fence()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
  RETURN NEW;
END;
$$;
REVOKE ALL ON FUNCTION syncular_writer_fence() FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
COMMENT ON FUNCTION syncular_writer_fence() IS 'internal: upstream''s fence trigger function (sync_commits_writer_fence); gosync''s body checks nothing: the fence and the head rule are sync_commits_writer_guard(), which an upstream boot does not replace.';
