-- The database clock in epoch milliseconds: the default of every now_ms
-- argument (NULL included, so generated Go code can pass "no value").
CREATE OR REPLACE FUNCTION sync_now_ms()
RETURNS bigint
LANGUAGE sql
STABLE
AS $$
  SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint
$$;
