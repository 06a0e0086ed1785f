-- Argument check and default of every now_ms argument: NULL is the database
-- clock; a caller's clock may differ from the database's by seconds, not
-- years, so a value more than 5 minutes (300000 ms) away is refused
-- (22023). A stamp far in the future would pin a claim's lease (no fleet
-- worker takes over after a crash), one near 2^63 breaks every conversion to
-- a timestamp, a negative one means nothing. Returns the stamp to store.
CREATE OR REPLACE FUNCTION sync_assert_now_ms(label text, value bigint)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, @extschema@, pg_temp
AS $$
DECLARE
  db_now bigint := sync_now_ms();
BEGIN
  IF value IS NULL THEN
    RETURN db_now;
  END IF;
  IF value < db_now - 300000 OR value > db_now + 300000 THEN
    RAISE EXCEPTION 'invalid argument: % % is more than 300000 ms (5 minutes) from the database clock %', label, value, db_now
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  RETURN value;
END;
$$;
REVOKE ALL ON FUNCTION sync_assert_now_ms(text,bigint) FROM PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin;
GRANT EXECUTE ON FUNCTION sync_assert_now_ms(text,bigint) TO sync_reader;
COMMENT ON FUNCTION sync_assert_now_ms(text,bigint) IS 'internal: argument check and default of every now_ms: NULL is the database clock; more than 5 minutes from it is 22023. Returns the stamp to store.';
