// Package gosync is the Go API of gosync: it applies the embedded migrations
// and calls the SQL rules of the migration barrier through the generated
// queries in package db.
package gosync

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	gosql "github.com/gosync/gosync/sql"
)

// NewMigrator returns a goose Provider over gosync's embedded migrations on
// the pool's database: the same files the goose CLI applies from
// sql/migrations. A Postgres session lock serializes concurrent migrators
// (two service replicas starting at once). Close the provider when done; it
// does not close the pool.
func NewMigrator(pool *pgxpool.Pool) (*goose.Provider, error) {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, fmt.Errorf("gosync: migration lock: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, stdlib.OpenDBFromPool(pool),
		gosql.Migrations(), goose.WithSessionLocker(locker))
	if err != nil {
		return nil, fmt.Errorf("gosync: migrations: %w", err)
	}
	return p, nil
}

// Migrate applies every pending migration and returns the database's version.
func Migrate(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	p, err := NewMigrator(pool)
	if err != nil {
		return 0, err
	}
	defer p.Close()
	if _, err := p.Up(ctx); err != nil {
		return 0, fmt.Errorf("gosync: migrate up: %w", err)
	}
	return p.GetDBVersion(ctx)
}
