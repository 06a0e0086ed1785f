-- Every now_ms argument is bounded (issue 17, section 4): the registry stamp
-- of sync_touch_partition and sync_rotate_log_epoch goes through
-- sync_assert_now_ms like the checkpoint functions' (00018), so no caller
-- can stamp a partition's last authentication years ahead. Function bodies
-- are verbatim copies of sql/functions/*.sql; the Down restores 00004's.
-- Like every migration from 00020 on, Up and Down end by recording the
-- installed catalog for the audit.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_touch_partition(partition text, log_epoch text DEFAULT NULL, now_ms bigint DEFAULT NULL)
RETURNS SETOF sync_partition_registry
LANGUAGE plpgsql
ROWS 1
AS $$
#variable_conflict use_column
BEGIN
  PERFORM sync_assert_key('partition', $1);
  IF $2 IS NOT NULL THEN
    PERFORM sync_assert_key('log_epoch', $2);
  END IF;
  RETURN QUERY
    INSERT INTO sync_partition_registry AS r (partition, log_epoch, epoch_required, last_authenticated_at_ms)
    VALUES ($1, coalesce($2, gen_random_uuid()::text), false, sync_assert_now_ms('now_ms', $3))
    ON CONFLICT (partition) DO UPDATE SET last_authenticated_at_ms = EXCLUDED.last_authenticated_at_ms
    RETURNING r.*;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_rotate_log_epoch(partition text, log_epoch text DEFAULT NULL, now_ms bigint DEFAULT NULL)
RETURNS SETOF sync_partition_registry
LANGUAGE plpgsql
ROWS 1
AS $$
#variable_conflict use_column
BEGIN
  PERFORM sync_assert_key('partition', $1);
  IF $2 IS NOT NULL THEN
    PERFORM sync_assert_key('log_epoch', $2);
  END IF;
  DELETE FROM sync_clients c WHERE c.partition = $1;
  RETURN QUERY
    INSERT INTO sync_partition_registry AS r (partition, log_epoch, epoch_required, last_authenticated_at_ms)
    VALUES ($1, coalesce($2, gen_random_uuid()::text), true, sync_assert_now_ms('now_ms', $3))
    ON CONFLICT (partition) DO UPDATE
      SET log_epoch = EXCLUDED.log_epoch, epoch_required = true,
          last_authenticated_at_ms = EXCLUDED.last_authenticated_at_ms
    RETURNING r.*;
END;
$$;
-- +goose StatementEnd

-- CREATE OR REPLACE resets SET and SECURITY DEFINER: restore what 00006 gave them.
-- +goose StatementBegin
DO $$
BEGIN
  EXECUTE format('ALTER FUNCTION sync_touch_partition(text, text, bigint) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  EXECUTE format('ALTER FUNCTION sync_rotate_log_epoch(text, text, bigint) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  ALTER FUNCTION sync_rotate_log_epoch(text, text, bigint) SECURITY DEFINER;
END;
$$;
-- +goose StatementEnd
SELECT sync_record_installed_catalog();

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_touch_partition(partition text, log_epoch text DEFAULT NULL, now_ms bigint DEFAULT NULL)
RETURNS SETOF sync_partition_registry
LANGUAGE plpgsql
ROWS 1
AS $$
#variable_conflict use_column
BEGIN
  PERFORM sync_assert_key('partition', $1);
  IF $2 IS NOT NULL THEN
    PERFORM sync_assert_key('log_epoch', $2);
  END IF;
  RETURN QUERY
    INSERT INTO sync_partition_registry AS r (partition, log_epoch, epoch_required, last_authenticated_at_ms)
    VALUES ($1, coalesce($2, gen_random_uuid()::text), false, coalesce($3, sync_now_ms()))
    ON CONFLICT (partition) DO UPDATE SET last_authenticated_at_ms = EXCLUDED.last_authenticated_at_ms
    RETURNING r.*;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION sync_rotate_log_epoch(partition text, log_epoch text DEFAULT NULL, now_ms bigint DEFAULT NULL)
RETURNS SETOF sync_partition_registry
LANGUAGE plpgsql
ROWS 1
AS $$
#variable_conflict use_column
BEGIN
  PERFORM sync_assert_key('partition', $1);
  IF $2 IS NOT NULL THEN
    PERFORM sync_assert_key('log_epoch', $2);
  END IF;
  DELETE FROM sync_clients c WHERE c.partition = $1;
  RETURN QUERY
    INSERT INTO sync_partition_registry AS r (partition, log_epoch, epoch_required, last_authenticated_at_ms)
    VALUES ($1, coalesce($2, gen_random_uuid()::text), true, coalesce($3, sync_now_ms()))
    ON CONFLICT (partition) DO UPDATE
      SET log_epoch = EXCLUDED.log_epoch, epoch_required = true,
          last_authenticated_at_ms = EXCLUDED.last_authenticated_at_ms
    RETURNING r.*;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
DO $$
BEGIN
  EXECUTE format('ALTER FUNCTION sync_touch_partition(text, text, bigint) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  EXECUTE format('ALTER FUNCTION sync_rotate_log_epoch(text, text, bigint) SET search_path = pg_catalog, %I, pg_temp', current_schema());
  ALTER FUNCTION sync_rotate_log_epoch(text, text, bigint) SECURITY DEFINER;
END;
$$;
-- +goose StatementEnd
SELECT sync_record_installed_catalog();
