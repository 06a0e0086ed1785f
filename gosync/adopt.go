package gosync

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	sqlfiles "github.com/gosync/gosync/sql"
)

// adoptUpstream runs the adoption script (sql/adopt/upstream.sql) on a
// database an upstream server created, before goose sees it: migrations are
// immutable and 00001 creates its tables plainly, so the script brings the
// tables to 00001's state (or refuses, naming each incompatible table,
// changing nothing), gives every table and the upstream fence function to
// the owner role (the current role; or refuses, naming what to run, when it
// cannot take them) and records 00001 in table. It runs only when
// sync_partitions exists and table records no migration yet; a fresh
// database, or one gosync already migrated, is left to goose. It runs in
// tx, the migration session's transaction, under the migration lock: only
// Up and Down get here.
func adoptUpstream(ctx context.Context, tx *sql.Tx, table string) error {
	var upstream, hasTable bool
	err := tx.QueryRowContext(ctx, `
		SELECT to_regclass(quote_ident(current_schema()) || '.sync_partitions') IS NOT NULL,
		       EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = $1)`,
		table).Scan(&upstream, &hasTable)
	if err != nil {
		return fmt.Errorf("gosync: adopt: %w", err)
	}
	if !upstream {
		return nil
	}
	target := pgx.Identifier{table}.Sanitize() // a checked plain identifier
	if hasTable {
		var recorded bool
		if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM "+target+" WHERE version_id <> 0)").Scan(&recorded); err != nil {
			return fmt.Errorf("gosync: read %s: %w", table, err)
		}
		if recorded {
			return nil
		}
	}
	script := strings.ReplaceAll(sqlfiles.AdoptUpstream(), DefaultVersionTable, target)
	if _, err := tx.ExecContext(ctx, script); err != nil {
		if err := MapError(err); errors.Is(err, ErrCannotAdopt) || errors.Is(err, ErrCannotTakeOwnership) {
			return err // names each table and difference, or each object and its owner
		}
		return fmt.Errorf("gosync: adopt the existing sync tables: %w", err)
	}
	return nil
}

// syncTables are the tables migration 00001's Down drops.
var syncTables = []string{"sync_partitions", "sync_partition_registry", "sync_row_scopes", "sync_commits",
	"sync_changes", "sync_change_scopes", "sync_push_results", "sync_reactions", "sync_clients",
	"sync_blob_refs", "sync_tombstones", "sync_schema_meta", "sync_backfill_checkpoints", "sync_writer_fence"}

// RefuseDroppingData returns ErrWouldDropData when any sync table holds
// rows: rolling back migration 00001 drops them all (an adopted upstream
// database keeps its data only if nobody migrates below version 1).
// `gosync migrate down` calls it before rolling back 00001.
func RefuseDroppingData(ctx context.Context, pool interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}) error {
	var present, full []string
	if err := pool.QueryRow(ctx, `SELECT coalesce(array_agg(t), '{}') FROM unnest($1::text[]) t
		WHERE to_regclass(quote_ident(t)) IS NOT NULL`, syncTables).Scan(&present); err != nil {
		return fmt.Errorf("gosync: check the sync tables: %w", err)
	}
	for _, t := range present {
		var rows bool
		// Names from the fixed list above, quoted: no caller input in the SQL.
		if err := pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+pgx.Identifier{t}.Sanitize()+")").Scan(&rows); err != nil {
			return fmt.Errorf("gosync: check %s: %w", t, err)
		}
		if rows {
			full = append(full, t)
		}
	}
	if len(full) > 0 {
		return fmt.Errorf("%w: rolling back 00001 would drop %s, which hold rows", ErrWouldDropData, strings.Join(full, ", "))
	}
	return nil
}
