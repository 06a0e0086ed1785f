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
// an adopted database.
func carryOverHistory(ctx context.Context, db *sql.DB, table string, sources []*goose.Source) error {
	if table == legacyVersionTable {
		return nil
	}
	versions := make([]int64, len(sources))
	for i, s := range sources {
		versions[i] = s.Version
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("gosync: version table: %w", err)
	}
	defer tx.Rollback()
	// Two replicas starting at once: one copies, the other then finds the rows.
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtext('gosync version table'))"); err != nil {
		return fmt.Errorf("gosync: version table: %w", err)
	}
	var exists, legacy bool
	err = tx.QueryRowContext(ctx, `
		SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = $1),
		       EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = $2)
		   AND EXISTS (SELECT 1 FROM pg_proc
		                WHERE proname = 'sync_claim_checkpoint' AND pronamespace = current_schema()::regnamespace)
		   AND EXISTS (SELECT 1 FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
		                WHERE t.tgname = 'sync_commits_writer_fence' AND c.relname = 'sync_commits'
		                  AND c.relnamespace = current_schema()::regnamespace)`,
		table, legacyVersionTable).Scan(&exists, &legacy)
	if err != nil {
		return fmt.Errorf("gosync: version table: %w", err)
	}
	if !legacy {
		return nil
	}
	target := pgx.Identifier{table}.Sanitize() // a checked plain identifier
	if exists {
		var recorded bool
		if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM "+target+" WHERE version_id <> 0)").Scan(&recorded); err != nil {
			return fmt.Errorf("gosync: read %s: %w", table, err)
		}
		if recorded {
			return nil
		}
	}
	var foreign int
	err = tx.QueryRowContext(ctx, `SELECT count(*) FROM goose_db_version WHERE version_id <> 0 AND version_id <> ALL($1)`,
		versions).Scan(&foreign)
	if err != nil {
		return fmt.Errorf("gosync: read %s: %w", legacyVersionTable, err)
	}
	if foreign > 0 {
		return nil
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
	return tx.Commit()
}
