package gosync

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Sentinel errors for the barrier's refusals. The SQL functions raise them
// with the exact upstream message; callers test them with errors.Is and
// reach the server's DETAIL through errors.As(*pgconn.PgError).
var (
	ErrWriterFenceRejected    = errors.New("sync.storage.writer_fence_rejected")
	ErrCheckpointIncomplete   = errors.New("sync.storage.checkpoint_incomplete")
	ErrCheckpointNotDeclared  = errors.New("sync.storage.checkpoint_not_declared")
	ErrCheckpointFenceMissing = errors.New("sync.storage.checkpoint_fence_missing")
	ErrSchemaNotReady         = errors.New("sync.schema_not_ready")
	ErrSegmentExpired         = errors.New("sync.segment_expired")

	// The head-only rules, raised by the triggers for every writer (gosync's
	// additions; the upstream server never raises them): a commit not at the
	// seq its own transaction allocated, a change or change scope without a
	// commit of its own transaction, a head or horizon moved other than by
	// one allocation or a prune.
	ErrCommitNotAtHead      = errors.New("sync.storage.commit_not_at_head")
	ErrChangeWithoutCommit  = errors.New("sync.storage.change_without_commit")
	ErrPartitionSeqRejected = errors.New("sync.storage.partition_seq_rejected")

	// ErrCheckpointActivated: sync_remove_checkpoint refuses an activated

	// ErrWouldDropData: `migrate down` past version 1 would drop sync tables
	// that hold rows (migration 00001's Down drops them); raised in Go by
	// RefuseDroppingData, before anything runs.
	ErrWouldDropData = errors.New("gosync: rolling back would drop tables that hold data")
	// checkpoint (the gate has served on it; gosync's addition).
	ErrCheckpointActivated = errors.New("sync.storage.checkpoint_activated")

	// ErrBackfillStopped: Backfill.Stop was closed; the backfill stopped
	// after its current batch (committed), and a new run resumes from the
	// stored watermark.
	ErrBackfillStopped = errors.New("backfill stopped")

	// ErrNeedsPool: ReadAuthoritative and a backfill's initial fill open
	// their own REPEATABLE READ transaction, which a Store bound to a
	// caller's transaction (WithTx) cannot; call them on New(pool).
	ErrNeedsPool = errors.New("gosync: this call needs a pool-backed Store (New), not one from WithTx")

	// ErrInvalidArgument is bad input (an empty partition, a negative
	// watermark, ...), refused before anything was written.
	ErrInvalidArgument = errors.New("invalid argument")

	// ErrCannotAdopt: the adoption script (sql/adopt/upstream.sql) found existing sync tables of a shape
	// gosync cannot use (a missing column, another type or key); the
	// message names each table and difference, and nothing was changed.
	ErrCannotAdopt = errors.New("gosync cannot adopt the existing sync tables")
)

// sqlErrors maps an upstream error message to its sentinel.
var sqlErrors = map[string]error{}

func init() {
	for _, e := range []error{ErrWriterFenceRejected, ErrCheckpointIncomplete, ErrCheckpointNotDeclared,
		ErrCheckpointFenceMissing, ErrSchemaNotReady, ErrSegmentExpired,
		ErrCommitNotAtHead, ErrChangeWithoutCommit, ErrPartitionSeqRejected, ErrCheckpointActivated} {
		sqlErrors[e.Error()] = e
	}
}

// markerRefusals maps the marker rules' messages (sync_check_schema_version,
// SQLSTATE 55000, the upstream server's words) by their fixed beginning.
var markerRefusals = map[string]error{
	"stored schema version ":                                     ErrSchemaTooNew,
	"stored schema layouts disagree with the configured schema ": ErrSchemaMismatch,
}

// StorageError is a refusal raised by the database. It matches its sentinel
// with errors.Is and unwraps to the *pgconn.PgError.
type StorageError struct {
	Kind error           // one of the Err* sentinels
	PG   *pgconn.PgError // the server's error, with its DETAIL and HINT
}

// Error is the sentinel and the server's DETAIL.
func (e *StorageError) Error() string {
	if e.Kind == ErrCannotAdopt {
		return e.PG.Message // names the tables and differences
	}
	if e.Kind == ErrInvalidArgument {
		if e.PG.Code == "22021" {
			return "invalid argument: a string holds a NUL byte or invalid UTF-8, which Postgres text cannot store (" + e.PG.Message + ")"
		}
		return e.PG.Message // already "invalid argument: ..."
	}
	if e.Kind == ErrSchemaTooNew || e.Kind == ErrSchemaMismatch {
		return e.Kind.Error() + ": " + e.PG.Message // the upstream words
	}
	if e.PG.Detail != "" {
		return e.Kind.Error() + ": " + e.PG.Detail
	}
	return e.Kind.Error()
}

// Is makes errors.Is(err, ErrWriterFenceRejected) and friends work.
func (e *StorageError) Is(target error) bool { return target == e.Kind }

// Unwrap returns the server's error.
func (e *StorageError) Unwrap() error { return e.PG }

// MapError turns a database error carrying one of the barrier's messages
// (or an argument check's invalid_parameter_value) into a *StorageError;
// any other error is returned unchanged.
func MapError(err error) error {
	var pg *pgconn.PgError
	if !errors.As(err, &pg) {
		return err
	}
	if kind, ok := sqlErrors[pg.Message]; ok {
		return &StorageError{Kind: kind, PG: pg}
	}
	switch pg.Code {
	case "22023", // invalid_parameter_value, raised by sync_assert_*
		"22021": // character_not_in_repertoire: a NUL byte in a text argument
		return &StorageError{Kind: ErrInvalidArgument, PG: pg}
	case "55000": // object_not_in_prerequisite_state: sync_check_schema_version's refusals
		for prefix, kind := range markerRefusals {
			if strings.HasPrefix(pg.Message, prefix) {
				return &StorageError{Kind: kind, PG: pg}
			}
		}
	case "42P16": // invalid_table_definition
		if strings.HasPrefix(pg.Message, ErrCannotAdopt.Error()) {
			return &StorageError{Kind: ErrCannotAdopt, PG: pg}
		}
	}
	return err
}
