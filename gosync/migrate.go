package gosync

import (
	"context"
	"fmt"
	"regexp"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	sqlfiles "github.com/gosync/gosync/sql"
)

// DefaultVersionTable records gosync's migrations. It is not goose's default
// (goose_db_version), which stays the application's own.
const DefaultVersionTable = "gosync_db_version"

// MigrateOption configures NewMigrator and Migrate.
type MigrateOption func(*migrateConfig)

type migrateConfig struct {
	versionTable string
}

// WithVersionTable records gosync's migrations in table (a plain lower-case
// identifier in the current schema) instead of DefaultVersionTable.
func WithVersionTable(table string) MigrateOption {
	return func(c *migrateConfig) { c.versionTable = table }
}

// goose writes the version table's name into its SQL as is.
var plainIdentifier = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// NewMigrator returns a goose Provider over gosync's embedded migrations on
// the pool's database: the same files the goose CLI applies from
// sql/migrations, recorded in gosync's own version table. A database that an
// earlier gosync build migrated (its history in goose_db_version) has that
// history copied into the version table first (nothing is re-applied). A
// Postgres session lock serializes concurrent migrators (two service
// replicas starting at once). Close the provider when done; it does not
// close the pool.
func NewMigrator(ctx context.Context, pool *pgxpool.Pool, opts ...MigrateOption) (*goose.Provider, error) {
	cfg := migrateConfig{versionTable: DefaultVersionTable}
	for _, opt := range opts {
		opt(&cfg)
	}
	if !plainIdentifier.MatchString(cfg.versionTable) {
		return nil, fmt.Errorf("%w: version table %q is not a plain lower-case identifier", ErrInvalidArgument, cfg.versionTable)
	}
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, fmt.Errorf("gosync: migration lock: %w", err)
	}
	db := stdlib.OpenDBFromPool(pool)
	p, err := goose.NewProvider(goose.DialectPostgres, db, sqlfiles.Migrations(),
		goose.WithSessionLocker(locker), goose.WithTableName(cfg.versionTable))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("gosync: migrations: %w", err)
	}
	if err := carryOverHistory(ctx, db, cfg.versionTable, p.ListSources()); err != nil {
		p.Close()
		return nil, err
	}
	if err := adoptUpstream(ctx, db, cfg.versionTable); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Migrate applies every pending migration and returns the database's version.
// Existing sync tables of an incompatible shape fail with ErrCannotAdopt.
func Migrate(ctx context.Context, pool *pgxpool.Pool, opts ...MigrateOption) (int64, error) {
	p, err := NewMigrator(ctx, pool, opts...)
	if err != nil {
		return 0, err
	}
	defer p.Close()
	if _, err := p.Up(ctx); err != nil {
		return 0, fmt.Errorf("gosync: migrate up: %w", MapError(err))
	}
	if err := GrantVersionTable(ctx, pool, opts...); err != nil {
		return 0, err
	}
	return p.GetDBVersion(ctx)
}

// GrantVersionTable lets sync_reader, and so every sync_* role, read the
// version table: `gosync status` and `migrate status` check the migration
// version, and a monitoring login is not the table's owner. Migrate calls
// it; after Up on a NewMigrator provider, call it yourself. It does
// nothing before the table and the roles (migration 00006) exist.
func GrantVersionTable(ctx context.Context, pool *pgxpool.Pool, opts ...MigrateOption) error {
	cfg := migrateConfig{versionTable: DefaultVersionTable}
	for _, opt := range opts {
		opt(&cfg)
	}
	if !plainIdentifier.MatchString(cfg.versionTable) {
		return fmt.Errorf("%w: version table %q is not a plain lower-case identifier", ErrInvalidArgument, cfg.versionTable)
	}
	var ready bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass(quote_ident($1)) IS NOT NULL
		AND EXISTS (SELECT FROM pg_roles WHERE rolname = 'sync_reader')`, cfg.versionTable).Scan(&ready); err != nil {
		return fmt.Errorf("gosync: version table: %w", err)
	}
	if !ready {
		return nil
	}
	// A checked plain identifier, never caller text as such.
	if _, err := pool.Exec(ctx, "GRANT SELECT ON "+pgx.Identifier{cfg.versionTable}.Sanitize()+" TO sync_reader"); err != nil {
		return fmt.Errorf("gosync: let sync_reader read %s: %w", cfg.versionTable, err)
	}
	return nil
}
