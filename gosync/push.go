package gosync

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/gosync/gosync/db"
)

// Server is what a running server knows about itself, for the gate.
type Server struct {
	SchemaVersion int64                   // the running schema version; every commit carries it
	Declared      []CheckpointDeclaration // checkpoints this server knows; others pending close the gate
	ExpectedEpoch string                  // the client's log epoch, "" when it has none
}

// gate applies the refusal rule inside tx.
func (s *Store) gate(ctx context.Context, tx pgx.Tx, partition string, srv Server) error {
	r, err := s.WithTx(tx).ServeCheck(ctx, partition, srv)
	if err != nil {
		return err
	}
	if r != nil {
		return &NotReadyError{Refusal: *r}
	}
	return nil
}

// Commit is one client commit to append.
type Commit struct {
	ClientID, ClientCommitID, ActorID string
	CreatedAtMs                       int64
	Changes                           []Change
}

// Change is one row change of a commit.
type Change struct {
	Table, RowID string
	Op           int16
	RowVersion   *int64              // nil: none
	Scopes       map[string][]string // scope variable → values, indexed in sync_change_scopes
	Payload      []byte              // nil: none
}

// PushResult says where the commit landed.
type PushResult struct {
	CommitSeq int64
	Replayed  bool // the commit was pushed before; nothing was appended
}

// Push appends a commit in one transaction: the partition lock, the serve
// gate read on that same connection (a refusal rolls back and returns a
// *NotReadyError), then the commit stamped with the running schema version,
// its changes, change scopes and push result. Replaying a pushed
// (ClientID, ClientCommitID) returns its stored result and appends nothing.
func (s *Store) Push(ctx context.Context, partition string, c Commit, srv Server) (PushResult, error) {
	arg := db.PushCommitParams{
		Partition: partition, ClientID: c.ClientID, ClientCommitID: c.ClientCommitID,
		ActorID: c.ActorID, CreatedAtMs: c.CreatedAtMs, WriterVersion: srv.SchemaVersion,
		Tbls: make([]string, len(c.Changes)), RowIds: make([]string, len(c.Changes)),
		Ops: make([]int16, len(c.Changes)), RowVersions: make([]int64, len(c.Changes)),
		Scopes: make([][]byte, len(c.Changes)), Payloads: make([][]byte, len(c.Changes)),
	}
	for i, ch := range c.Changes {
		arg.Tbls[i], arg.RowIds[i], arg.Ops[i], arg.Payloads[i] = ch.Table, ch.RowID, ch.Op, ch.Payload
		arg.RowVersions[i] = -1 // NULL, see sql/queries/push.sql
		if ch.RowVersion != nil {
			if *ch.RowVersion < 0 {
				return PushResult{}, fmt.Errorf("%w: change %d: negative row version %d", ErrInvalidArgument, i, *ch.RowVersion)
			}
			arg.RowVersions[i] = *ch.RowVersion
		}
		scopes := ch.Scopes
		if scopes == nil {
			scopes = map[string][]string{}
		}
		b, err := json.Marshal(scopes)
		if err != nil {
			return PushResult{}, err
		}
		arg.Scopes[i] = b
	}
	var res PushResult
	err := pgx.BeginFunc(ctx, s.begin, func(tx pgx.Tx) error {
		// Lock first, then the gate on the same connection and transaction:
		// no schema bump can land between the gate and the write.
		if _, err := s.q.LockPartitionForWrite(ctx, tx, partition); err != nil {
			return MapError(err)
		}
		if err := s.gate(ctx, tx, partition, srv); err != nil {
			return err
		}
		raw, err := s.q.PushCommit(ctx, tx, arg)
		if err != nil {
			return MapError(err)
		}
		var out struct {
			CommitSeq int64 `json:"commitSeq"`
			Replayed  bool  `json:"replayed"`
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return fmt.Errorf("gosync: push result: %w", err)
		}
		res = PushResult(out)
		return nil
	})
	return res, err
}

// ReadAuthoritative runs read inside one REPEATABLE READ READ ONLY
// transaction: the gate is read first, in the snapshot (a refusal returns a
// *NotReadyError), then read, then the partition's cursor (max_commit_seq) —
// all of the same snapshot, so a schema bump or an epoch rotation can never
// land between the gate and the data.
func (s *Store) ReadAuthoritative(ctx context.Context, partition string, srv Server, read func(ctx context.Context, tx pgx.Tx) error) (cursor int64, err error) {
	if s.pool == nil {
		return 0, fmt.Errorf("gosync: ReadAuthoritative needs a pool-backed Store (it opens its own snapshot)")
	}
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := s.gate(ctx, tx, partition, srv); err != nil {
			return err
		}
		if err := read(ctx, tx); err != nil {
			return err
		}
		cursor, err = s.q.CurrentCursor(ctx, tx, partition)
		return MapError(err)
	})
	return cursor, err
}
