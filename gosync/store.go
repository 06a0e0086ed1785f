package gosync

import (
	"context"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gosync/gosync/db"
)

// Store calls the barrier's SQL functions. Built from a pool, each call runs
// on its own pooled connection; WithTx binds the same calls to a caller's
// transaction (advance a watermark with the projection batch it covers, read
// the gate on the connection that then writes).
type Store struct {
	conn  db.DBTX
	begin beginner      // opens a backfill batch's and a schema bump's transaction (a savepoint under WithTx)
	pool  *pgxpool.Pool // nil under WithTx: ReadAuthoritative needs its own snapshot
	q     *db.Queries
}

type beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{conn: pool, begin: pool, pool: pool, q: db.New()} }

// WithTx returns a Store whose calls run inside tx: checkpoint calls, the
// gate, Push (one statement in tx), a backfill's batches and a schema bump
// (each in a savepoint; the bump's lock_timeout then stays set for the rest
// of tx). Calls that
// need their own transactions return ErrNeedsPool here: ReadAuthoritative
// and a backfill's initial fill (their own REPEATABLE READ snapshot), and
// RunBackfills (its workers claim and commit concurrently, which one
// transaction on one connection cannot).
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
