package gosync

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
)

// legacyVersionTable is where gosync builds before the version table of its
// own recorded their migrations: goose's default, which applications use.
const legacyVersionTable = "goose_db_version"

// carryOverHistory copies gosync's migration history out of
// goose_db_version into table, once: when table records no migration yet
// (missing, or only goose's version-0 row: the plain goose CLI was tried
// first and refused by 00001) and goose_db_version is recognisably gosync's:
// objects only gosync's migrations create are present (sync_claim_checkpoint,
// 00003; the writer fence trigger, 00002) and every version it records is
// one of gosync's migrations. goose_db_version is read, never written. An
// application's history (other versions, or no gosync objects) is left alone
// and gosync starts its own table; a gosync history stopped before 00003 is
// not recognised either, which is harmless: 00001 and 00002 run again as on
// an adopted database. It runs in the migration session's transaction,
// under the migration lock: only Up and Down get here.
func carryOverHistory(ctx context.Context, tx *sql.Tx, table string, sources []*goose.Source) error {
	legacy, err := legacyHistoryApplies(ctx, tx, table, sources)
	if err != nil || !legacy {
		return err
	}
	target := pgx.Identifier{table}.Sanitize() // a checked plain identifier
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = $1)`,
		table).Scan(&exists); err != nil {
		return fmt.Errorf("gosync: version table: %w", err)
	}
	if !exists {
		store, err := database.NewStore(database.DialectPostgres, table)
		if err != nil {
			return fmt.Errorf("gosync: version table: %w", err)
		}
		// goose's own DDL, so the table is exactly the one goose would create.
		if err := store.CreateVersionTable(ctx, tx); err != nil {
			return fmt.Errorf("gosync: create %s: %w", table, err)
		}
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO `+target+` (version_id, is_applied, tstamp)
		SELECT version_id, is_applied, tstamp FROM goose_db_version
		 WHERE version_id <> 0 OR NOT EXISTS (SELECT 1 FROM `+target+`)
		 ORDER BY id`)
	if err != nil {
		return fmt.Errorf("gosync: copy %s into %s: %w", legacyVersionTable, table, err)
	}
	return nil
}

// legacyHistoryApplies says whether carryOverHistory would copy (see
// there); it only reads, so the read-only verbs answer from goose_db_version
// what Up would record.
func legacyHistoryApplies(ctx context.Context, tx *sql.Tx, table string, sources []*goose.Source) (bool, error) {
	if table == legacyVersionTable {
		return false, nil
	}
	versions := make([]int64, len(sources))
	for i, s := range sources {
		versions[i] = s.Version
	}
	var exists, legacy bool
	err := tx.QueryRowContext(ctx, `
		SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = $1),
		       EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = $2)
		   AND EXISTS (SELECT 1 FROM pg_proc
		                WHERE proname = 'sync_claim_checkpoint' AND pronamespace = current_schema()::regnamespace)
		   AND EXISTS (SELECT 1 FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
		                WHERE t.tgname = 'sync_commits_writer_fence' AND c.relname = 'sync_commits'
		                  AND c.relnamespace = current_schema()::regnamespace)`,
		table, legacyVersionTable).Scan(&exists, &legacy)
	if err != nil {
		return false, fmt.Errorf("gosync: version table: %w", err)
	}
	if !legacy {
		return false, nil
	}
	if exists {
		var recorded bool
		if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM "+pgx.Identifier{table}.Sanitize()+" WHERE version_id <> 0)").Scan(&recorded); err != nil {
			return false, fmt.Errorf("gosync: read %s: %w", table, err)
		}
		if recorded {
			return false, nil
		}
	}
	var foreign int
	err = tx.QueryRowContext(ctx, `SELECT count(*) FROM goose_db_version WHERE version_id <> 0 AND version_id <> ALL($1)`,
		versions).Scan(&foreign)
	if err != nil {
		return false, fmt.Errorf("gosync: read %s: %w", legacyVersionTable, err)
	}
	return foreign == 0, nil
}
