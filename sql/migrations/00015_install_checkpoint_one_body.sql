-- One body raises a fence: sync_install_checkpoint (a declare, a DBA's bump)
-- calls sync_install_checkpoints with one pair instead of repeating its
-- rules (argument checks, never lowering a fence, never re-declaring, and
-- writing the partition row that makes the fence hold under REPEATABLE READ
-- and SERIALIZABLE). The function body is a verbatim copy of
-- sql/functions/sync_install_checkpoint.sql; the Down restores 00007's.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_install_checkpoint(
  partition text, name text, schema_version integer, now_ms bigint DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
  PERFORM sync_install_checkpoints(ARRAY[$1], ARRAY[$2], $3, $4);
END;
$$;
-- +goose StatementEnd

-- CREATE OR REPLACE resets SET and SECURITY DEFINER: restore what 00006
-- gave it (grants survive a replace).
-- +goose StatementBegin
DO $$
BEGIN
  EXECUTE format('ALTER FUNCTION sync_install_checkpoint(text, text, integer, bigint) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  ALTER FUNCTION sync_install_checkpoint(text, text, integer, bigint) SECURITY DEFINER;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_install_checkpoint(
  partition text, name text, schema_version integer, now_ms bigint DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
AS $$
#variable_conflict use_column
DECLARE
  p_partition ALIAS FOR $1;
  p_name ALIAS FOR $2;
  p_version ALIAS FOR $3;
BEGIN
  PERFORM sync_assert_key('partition', p_partition);
  PERFORM sync_assert_key('name', p_name);
  PERFORM sync_assert_nonnegative('schema_version', p_version, 1);
  INSERT INTO sync_partitions AS p (partition) VALUES (p_partition)
  ON CONFLICT (partition) DO UPDATE SET max_commit_seq = p.max_commit_seq;
  INSERT INTO sync_backfill_checkpoints AS c (
    partition, name, schema_version, state, watermark,
    owner_epoch, observed_rows, updated_at_ms)
  VALUES (p_partition, p_name, p_version, 'declared', 0, 0, 0, coalesce($4, sync_now_ms()))
  ON CONFLICT (partition, name) DO NOTHING;
  INSERT INTO sync_writer_fence AS f (partition, required_writer_version)
  VALUES (p_partition, p_version)
  ON CONFLICT (partition) DO UPDATE
    SET required_writer_version = GREATEST(f.required_writer_version, EXCLUDED.required_writer_version);
END;
$$;
-- +goose StatementEnd

-- CREATE OR REPLACE resets SET and SECURITY DEFINER: restore what 00006
-- gave it (grants survive a replace).
-- +goose StatementBegin
DO $$
BEGIN
  EXECUTE format('ALTER FUNCTION sync_install_checkpoint(text, text, integer, bigint) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  ALTER FUNCTION sync_install_checkpoint(text, text, integer, bigint) SECURITY DEFINER;
END;
$$;
-- +goose StatementEnd
