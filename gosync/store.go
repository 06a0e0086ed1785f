package gosync

import (
	"context"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gosync/gosync/internal/db"
)

// Store calls the barrier's SQL functions. Built from a pool, each call runs
// on its own pooled connection; WithTx binds the same calls to a caller's
// transaction (advance a watermark with the projection batch it covers, read
// the gate on the connection that then writes).
type Store struct {
	conn  db.DBTX
	begin beginner      // opens the transactions of Push and EnsureSchema (a savepoint under WithTx)
	pool  *pgxpool.Pool // nil under WithTx: ReadAuthoritative needs its own snapshot
	q     *db.Queries
}

type beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{conn: pool, begin: pool, pool: pool, q: db.New()} }

// WithTx returns a Store whose calls run inside tx: checkpoint calls, the
// gate, Push (in a savepoint), schema bumps. Two calls open their own
// REPEATABLE READ transaction and so need the Store from New, returning
// ErrNeedsPool here: ReadAuthoritative, and RunBackfill/RunBackfills with
// Backfill.Initial set.
func (s *Store) WithTx(tx pgx.Tx) *Store { return &Store{conn: tx, begin: tx, q: s.q} }

// optional is a text argument that is NULL when empty.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// int32Arg narrows a Go version number to the SQL integer column it lands in.
func int32Arg(label string, v int64) (int32, error) {
	if v < math.MinInt32 || v > math.MaxInt32 {
		return 0, fmt.Errorf("%w: %s %d is out of range for a Postgres integer", ErrInvalidArgument, label, v)
	}
	return int32(v), nil
}
