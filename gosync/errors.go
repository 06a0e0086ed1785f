package gosync

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Every error package gosync returns is declared here, grouped by origin:
//
//   - refusals the database raises, mapped by MapError into a *StorageError:
//     the barrier's codes (`sync.…`, the message, with the server's DETAIL),
//     the marker rules (the upstream server's sentences, SQLSTATE 55000),
//     argument checks (`invalid argument: …`, 22023) and the adoption
//     script (`gosync: cannot adopt …`, 42P16);
//   - upstream codes Go makes from a SQL answer (ErrSchemaNotReady, ...);
//   - errors made in Go, whose message starts with `gosync: ` (context
//     added around an error that already carries its prefix, such as
//     RunBackfills' `partition "p": `, stays inside it).
//
// Test them with errors.Is and errors.As, never by text.

// The barrier's codes, raised by the SQL functions and triggers (the
// message is the code, the details are in DETAIL).
var (
	// ErrWriterFenceRejected: a commit's writer_version is below the
	// partition's fence (syncular_writer_fence; upstream's code).
	ErrWriterFenceRejected = errors.New("sync.storage.writer_fence_rejected")
	// ErrCheckpointFenceMissing: sync_activate_checkpoint refuses a
	// checkpoint whose partition's writer fence is below its schema version
	// (upstream's code).
	ErrCheckpointFenceMissing = errors.New("sync.storage.checkpoint_fence_missing")
	// ErrCheckpointNotDeclared: no such checkpoint, or (sync_claim_checkpoint)
	// none that may be claimed at that version: declared at another version,
	// or already activated (sync_claim_checkpoint, sync_activate_checkpoint,
	// sync_remove_checkpoint; upstream's code). Also made in Go by
	// Store.Checkpoint, RunBackfills and `gosync backfill` when the row is
	// missing.
	ErrCheckpointNotDeclared = errors.New("sync.storage.checkpoint_not_declared")
	// ErrCheckpointActivated: sync_remove_checkpoint refuses an activated
	// checkpoint; the gate has served on it (gosync's code).
	ErrCheckpointActivated = errors.New("sync.storage.checkpoint_activated")

	// The head-only rules, raised by the triggers for every writer (gosync's
	// codes; the upstream server never raises them): a commit not at the
	// seq its own transaction allocated, a change or change scope without a
	// commit of its own transaction, a head or horizon moved other than by
	// one allocation or a prune (or written without allocating by a role
	// other than the owner), a change whose op is neither upsert nor delete.
	ErrCommitNotAtHead      = errors.New("sync.storage.commit_not_at_head")
	ErrChangeWithoutCommit  = errors.New("sync.storage.change_without_commit")
	ErrPartitionSeqRejected = errors.New("sync.storage.partition_seq_rejected")
	ErrChangeOpRejected     = errors.New("sync.storage.change_op_rejected")
)

// Raised by the database with a message of their own, mapped by MapError;
// Go makes them too where it checks first.
var (
	// ErrInvalidArgument is bad input (an empty partition, a negative
	// watermark, ...), refused before anything was written: by Go's checks,
	// or by the SQL argument checks (SQLSTATE 22023, or 22021 for a NUL
	// byte), which MapError maps to it.
	ErrInvalidArgument = errors.New("gosync: invalid argument")
	// ErrUnknownSources: a backfill's or an activation's source tables are
	// empty or name a table the stored schema (sync_schema_meta's layouts)
	// does not have; sync_assert_source_tables (22023) names the known
	// tables. Also matches ErrInvalidArgument.
	ErrUnknownSources = errors.New("gosync: the sources are not tables of the stored schema")

	// ErrSchemaTooNew: EnsureSchema's refusal when the database was
	// migrated by a newer server. The rule is SQL's
	// (sync_check_schema_version, also run by sync_set_schema_version):
	// MapError maps its refusal (SQLSTATE 55000, the upstream server's
	// sentence) to this sentinel.
	ErrSchemaTooNew = errors.New("gosync: stored schema is newer than the configured schema")
	// ErrSchemaMismatch: same version, different layouts, or a bump that
	// does more than append nullable columns (mapped from
	// sync_check_schema_version like ErrSchemaTooNew, in the upstream
	// server's words), or a configured column missing from the physical
	// table (checked in Go).
	ErrSchemaMismatch = errors.New("gosync: stored schema disagrees with the configured schema")
	// ErrCannotAdopt: the adoption script (sql/adopt/upstream.sql, run by
	// Migrator.Up and Migrate) found existing sync tables of a shape gosync cannot use
	// (a missing column, another type or key); it raises this message
	// (SQLSTATE 42P16) naming each table and difference, and nothing was
	// changed.
	ErrCannotAdopt = errors.New("gosync: cannot adopt the existing sync tables")
)

// Upstream's codes that gosync makes in Go (the rule itself is SQL's: Go
// only turns its answer into the error upstream clients expect).
var (
	// ErrSchemaNotReady: the gate refused a push or an authoritative read
	// (*NotReadyError, from sync_serve_check's refusal row; ServeCheck itself
	// returns the *Refusal) or the server cannot start (*ReadinessError).
	ErrSchemaNotReady = errors.New("sync.schema_not_ready")
	// ErrSegmentExpired: Store.SegmentExpired, when sync_segment_expired
	// says the segment predates a backfill checkpoint: re-pull.
	ErrSegmentExpired = errors.New("sync.segment_expired")
	// ErrCheckpointIncomplete: EnsureSchema found a checkpoint of the
	// configured version that is not activated and that the server did not
	// declare.
	ErrCheckpointIncomplete = errors.New("sync.storage.checkpoint_incomplete")
)

// Made in Go.
var (
	// ErrInvalidSchema: Schema.Validate refuses the configured schema
	// (readiness phase schema_compile).
	ErrInvalidSchema = errors.New("gosync: invalid schema")

	// ErrLockBusy: the schema bump could not take the migration lock within
	// its time budget (writers kept sync_partitions busy). EnsureSchema
	// returns it as a *LockBusyError naming who held the lock.
	ErrLockBusy = errors.New("gosync: the schema change's migration lock stayed busy")

	// A backfill worker's stops.
	//
	// ErrLostOwnership: another worker claimed the checkpoint; this one
	// stopped and wrote nothing more (a batch in flight was rolled back).
	ErrLostOwnership = errors.New("gosync: backfill lost ownership of the checkpoint to a newer claim")
	// ErrLogPruned: the log is pruned past the watermark, so activation
	// cannot prove coverage (`unverifiable`), or a batch would advance over
	// history pruned since it started (sync_advance_checkpoint raises
	// sync.storage.log_pruned, which MapError maps here; the batch rolled
	// back). Rebuild from current rows.
	ErrLogPruned = errors.New("gosync: the log is pruned past the backfill watermark; coverage cannot be proven")
	// ErrBatchTransactionEnded: a backfill's apply ended the batch's
	// transaction (a COMMIT or ROLLBACK of its own), so the watermark was
	// not advanced: the advance runs only in the transaction the batch
	// opened. After a COMMIT, what the apply wrote before it stays written.
	ErrBatchTransactionEnded = errors.New("gosync: the backfill apply ended the batch's transaction")
	// ErrBackfillStopped: Backfill.Stop was closed; the backfill stopped
	// after its current batch (committed), and a new run resumes from the
	// stored watermark.
	ErrBackfillStopped = errors.New("gosync: backfill stopped")

	// ErrNeedsPool: ReadAuthoritative and a backfill's initial fill open
	// their own REPEATABLE READ transaction, and RunBackfills runs
	// concurrent workers that commit their claims, which a Store bound to a
	// caller's transaction (WithTx) cannot; call them on New(pool).
	ErrNeedsPool = errors.New("gosync: this call needs a pool-backed Store (New), not one from WithTx")

	// ErrWouldDropData: `migrate down` past version 1 would drop sync tables
	// that hold rows (migration 00001's Down drops them); RefuseDroppingData
	// checks before anything runs.
	ErrWouldDropData = errors.New("gosync: rolling back would drop tables that hold data")

	// ErrFenceGuardMissing: EnsureReady found gosync's fence function
	// sync_commits_writer_guard() (00025) without its enabled trigger
	// sync_commits_writer_guard on sync_commits: the fence and the head
	// rule are not enforced (an owner dropped or disabled it). Run
	// `gosync migrate up` after restoring it, and read sync_security_audit().
	ErrFenceGuardMissing = errors.New("gosync: gosync's fence trigger sync_commits_writer_guard is missing or disabled")
)

// errRaced: another server bumped the marker while this one waited for the
// migration lock; EnsureSchema re-runs its checks (never returned).
var errRaced = errors.New("gosync: schema marker changed during the bump")

// sqlErrors maps a database message to its sentinel.
var sqlErrors = map[string]error{}

func init() {
	for _, e := range []error{ErrWriterFenceRejected, ErrCheckpointFenceMissing, ErrCheckpointNotDeclared,
		ErrCheckpointActivated, ErrCommitNotAtHead, ErrChangeWithoutCommit, ErrPartitionSeqRejected, ErrChangeOpRejected} {
		sqlErrors[e.Error()] = e
	}
	sqlErrors["sync.storage.log_pruned"] = ErrLogPruned
}

// unknownSources is the fixed beginning of sync_assert_source_tables' refusals.
const unknownSources = "invalid argument: sources must name "

// markerRefusals maps the marker rules' messages (sync_check_schema_version,
// SQLSTATE 55000, the upstream server's words) by their fixed beginning.
var markerRefusals = map[string]error{
	"stored schema version ":                                     ErrSchemaTooNew,
	"stored schema layouts disagree with the configured schema ": ErrSchemaMismatch,
}

// bumpRefusals are the fixed parts of upstream's refused-bump sentences
// (sync_check_schema_version, 55000), which begin with a table name.
var bumpRefusals = []string{
	"— only appending nullable columns is supported",
	"must be nullable — existing rows have no value to backfill",
}

// StorageError is a refusal raised by the database. It matches its sentinel
// with errors.Is and unwraps to the *pgconn.PgError.
type StorageError struct {
	Kind error           // one of the Err* sentinels
	PG   *pgconn.PgError // the server's error, with its DETAIL and HINT
}

// Error is the sentinel and the server's DETAIL; the marker refusals, the
// adoption refusal and the argument checks carry their own message instead.
func (e *StorageError) Error() string {
	switch {
	case e.Kind == ErrCannotAdopt:
		return e.PG.Message // the sentinel's text, then each table and difference
	case e.Kind == ErrForeignOwner || e.Kind == ErrSchemaOwner || e.Kind == ErrCannotTakeOwnership:
		if e.PG.Hint != "" {
			return e.PG.Message + " (" + e.PG.Hint + ")" // each object and owner, then what to run
		}
		return e.PG.Message // the sentinel's text, then each table and difference
	case e.Kind == ErrInvalidArgument && e.PG.Code == "22021":
		return ErrInvalidArgument.Error() + ": a string holds a NUL byte or invalid UTF-8, which Postgres text cannot store (" + e.PG.Message + ")"
	case e.Kind == ErrInvalidArgument, e.Kind == ErrUnknownSources:
		return "gosync: " + e.PG.Message // the SQL check's "invalid argument: ..."
	case e.Kind == ErrSchemaTooNew || e.Kind == ErrSchemaMismatch:
		if e.PG.Hint != "" {
			return "gosync: " + e.PG.Message + " (" + e.PG.Hint + ")" // the remedy for an older gosync's marker
		}
		return "gosync: " + e.PG.Message // the upstream server's sentence
	case e.PG.Detail != "":
		return e.Kind.Error() + ": " + e.PG.Detail
	}
	return e.Kind.Error()
}

// Is makes errors.Is(err, ErrWriterFenceRejected) and friends work.
func (e *StorageError) Is(target error) bool {
	return target == e.Kind || (e.Kind == ErrUnknownSources && target == ErrInvalidArgument)
}

// Unwrap returns the server's error.
func (e *StorageError) Unwrap() error { return e.PG }

// MapError turns a database refusal into a *StorageError: a barrier code
// (by message), an argument check (22023, or 22021 for a NUL byte), a marker
// refusal (55000 and its fixed beginning) or the adoption refusal (42P16 and
// its beginning). Any other error is returned unchanged.
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
		if strings.HasPrefix(pg.Message, unknownSources) {
			return &StorageError{Kind: ErrUnknownSources, PG: pg}
		}
		return &StorageError{Kind: ErrInvalidArgument, PG: pg}
	case "55000": // object_not_in_prerequisite_state: sync_check_schema_version's refusals
		for prefix, kind := range markerRefusals {
			if strings.HasPrefix(pg.Message, prefix) {
				return &StorageError{Kind: kind, PG: pg}
			}
		}
		for _, words := range bumpRefusals {
			if strings.Contains(pg.Message, words) {
				return &StorageError{Kind: ErrSchemaMismatch, PG: pg}
			}
		}
	case "42501": // insufficient_privilege: the ownership refusals
		for _, r := range ownershipRefusals {
			if strings.HasPrefix(pg.Message, r.prefix) {
				return &StorageError{Kind: r.kind, PG: pg}
			}
		}
	case "42P16": // invalid_table_definition
		if strings.HasPrefix(pg.Message, ErrCannotAdopt.Error()) {
			return &StorageError{Kind: ErrCannotAdopt, PG: pg}
		}
	}
	return err
}

// ReadinessError is a start-up failure: code sync.schema_not_ready, the
// schema version and the phase; Cause keeps the diagnostic (table, column,
// checkpoint) for operators. errors.Is(err, ErrSchemaNotReady) holds.
type ReadinessError struct {
	Phase         ReadinessPhase
	SchemaVersion int64
	Cause         error
}

// Code is the client-visible identity of every readiness failure.
func (e *ReadinessError) Code() string { return ErrSchemaNotReady.Error() }

// Error is the code, the phase and the cause.
func (e *ReadinessError) Error() string {
	return fmt.Sprintf("%s: server not ready (phase %s, schema version %d): %v", e.Code(), e.Phase, e.SchemaVersion, e.Cause)
}

// Unwrap returns the cause.
func (e *ReadinessError) Unwrap() error { return e.Cause }

// Is matches ErrSchemaNotReady.
func (e *ReadinessError) Is(target error) bool { return target == ErrSchemaNotReady }

// NotReadyError is a serve-time refusal by the gate. Its message is the same
// for every refusal and never names the projection; Details carries the
// structured reason for the client.
type NotReadyError struct {
	Refusal Refusal
}

// Error never names the projection: the reason is in Details.
func (e *NotReadyError) Error() string {
	return ErrSchemaNotReady.Error() + ": server schema is not ready for this request"
}

// Is matches ErrSchemaNotReady.
func (e *NotReadyError) Is(target error) bool { return target == ErrSchemaNotReady }

// Details is the refusal's structured payload, as upstream sends it:
// {partition, projection}, {logEpochChanged: true} or
// {storedSchemaVersion, runningSchemaVersion}.
func (e *NotReadyError) Details() map[string]any {
	switch e.Refusal.Kind {
	case RefusalCheckpoint:
		return map[string]any{"partition": e.Refusal.Checkpoint.Partition, "projection": e.Refusal.Checkpoint.Name}
	case RefusalEpoch:
		return map[string]any{"logEpochChanged": true}
	default:
		return map[string]any{"storedSchemaVersion": e.Refusal.StoredSchemaVersion, "runningSchemaVersion": e.Refusal.RunningSchemaVersion}
	}
}

// Ownership refusals of Up and Down (raised by migration 00017's check and
// the adoption script, SQLSTATE 42501, mapped by MapError): nothing was
// changed, and the message names each object and its owner, the hint what to
// run.
var (
	// ErrForeignOwner: an object under a gosync name (sync_* / syncular_*
	// table, view, sequence, function; the version table) in the target
	// schema belongs to another role than the owner role, or the migrating
	// login cannot become the owner role (WithOwner).
	ErrForeignOwner = errors.New("gosync: objects under gosync names are owned by another role than the owner role")
	// ErrSchemaOwner: the target schema's owner (for pg_database_owner, the
	// database's owner) is neither the owner role nor a superuser, and can
	// drop gosync's objects (WithForeignSchemaOwner accepts it).
	ErrSchemaOwner = errors.New("gosync: the schema is owned by another role than the owner role")
	// ErrCannotTakeOwnership: adopting an upstream database, the owner role
	// cannot take its tables and fence function (it is neither a superuser
	// nor a member of their owner).
	ErrCannotTakeOwnership = errors.New("gosync: cannot take ownership of the upstream objects")
)

// ownershipRefusals maps the 42501 refusals by their fixed beginning.
var ownershipRefusals = []struct {
	prefix string
	kind   error
}{
	{ErrForeignOwner.Error(), ErrForeignOwner},
	{"gosync: schema ", ErrSchemaOwner},
	{ErrCannotTakeOwnership.Error(), ErrCannotTakeOwnership},
}

// ErrMigrationLockBusy: Up or Down could not take the migration lock (see
// *MigrationLockError, which matches it with errors.Is).
var ErrMigrationLockBusy = errors.New("gosync: the migration lock is held by another session")

// LockHolder is a session or a prepared transaction holding a lock gosync
// waited for: the migration lock (MigrationLockError) or a lock on
// sync_partitions that the schema bump's conflicts with (LockBusyError). A
// prepared transaction has no session: it keeps its locks across restarts
// until its owner or a superuser ends it.
type LockHolder struct {
	PID         int64  // the backend; 0 for a prepared transaction
	PreparedGID string // the prepared transaction's gid; "" for a session
	Role        string // the session's login, or the prepared transaction's owner
	Modes       string // its conflicting lock modes, when known
	Application string // a session's application_name, when known
	State       string // a session's state, when known
	PreparedAt  string // when the transaction was prepared, when known
}

// String names the holder and what ends it, the way an operator would.
func (h LockHolder) String() string {
	var about []string
	for _, s := range []string{h.Modes, h.Application, h.State, h.PreparedAt} {
		if s != "" {
			about = append(about, s)
		}
	}
	extra := ""
	if len(about) > 0 {
		extra = ", " + strings.Join(about, ", ")
	}
	if h.PreparedGID != "" {
		return fmt.Sprintf("prepared transaction %s (owner %s%s): ROLLBACK PREPARED %s as %s or a superuser",
			quoteLiteral(h.PreparedGID), h.Role, extra, quoteLiteral(h.PreparedGID), h.Role)
	}
	return fmt.Sprintf("pid %d (role %s%s): wait for its transaction to end, or SELECT pg_terminate_backend(%d) as %s or a superuser",
		h.PID, h.Role, extra, h.PID, h.Role)
}

// MigrationLockError: the migration lock stayed held past the lock timeout,
// or is held by a prepared transaction (which never ends by itself: Up fails
// at once); or a migration's own DDL waited past it for a lock on the sync
// tables (What says so; any reader can hold one). It names every holder and
// what to do.
type MigrationLockError struct {
	What    string // the lock waited for: "" is the migration lock itself
	Holders []LockHolder
	Waited  time.Duration
	Cause   error // the context's error when it ended the wait
}

// Error names every holder and what to run to free the lock.
func (e *MigrationLockError) Error() string {
	names := make([]string, len(e.Holders))
	for i, h := range e.Holders {
		names[i] = h.String()
	}
	if len(names) == 0 {
		names = []string{"a session that released it meanwhile: retry"}
	}
	msg := fmt.Sprintf("%s (waited %s): held by %s", ErrMigrationLockBusy, e.Waited.Round(time.Millisecond),
		strings.Join(names, "; "))
	if e.What != "" {
		msg = fmt.Sprintf("gosync: a migration waited for %s past the lock timeout (%s): held by %s", e.What,
			e.Waited.Round(time.Millisecond), strings.Join(names, "; "))
	}
	if e.Cause != nil {
		msg += ": " + e.Cause.Error()
	}
	return msg
}

// Is matches ErrMigrationLockBusy.
func (e *MigrationLockError) Is(target error) bool { return target == ErrMigrationLockBusy }

// Unwrap returns the context's error, if it ended the wait.
func (e *MigrationLockError) Unwrap() error { return e.Cause }

// quoteLiteral is s as an SQL string literal, for the advice only.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// LockBusyError: the schema bump's lock wait timed out (lock_timeout, SQLSTATE
// 55P03) on every attempt. Blockers are who held a conflicting lock on
// sync_partitions when the last attempt gave up (sync_schema_change_blockers;
// empty when it had just been released). A prepared transaction keeps its
// locks across restarts until its owner or a superuser runs ROLLBACK PREPARED
// (or COMMIT PREPARED) with its gid: no retry outlasts it. errors.Is(err,
// ErrLockBusy) holds; OnRetry hears one per attempt.
type LockBusyError struct {
	Blockers []LockHolder
	Attempts int           // attempts made (0 while OnRetry hears one attempt's)
	Waited   time.Duration // the time budget spent (MaxWait), 0 for one attempt
	Cause    error         // the last attempt's lock timeout
}

// Error names every blocker and what ends it.
func (e *LockBusyError) Error() string {
	msg := ErrLockBusy.Error()
	if e.Attempts > 0 {
		msg += fmt.Sprintf(" for %s (%d attempts)", e.Waited, e.Attempts)
	}
	if len(e.Blockers) == 0 {
		return msg + ": no conflicting lock was held when the last attempt gave up"
	}
	parts := make([]string, len(e.Blockers))
	for i, b := range e.Blockers {
		parts[i] = b.String()
	}
	return msg + ": held by " + strings.Join(parts, "; ")
}

// Is matches ErrLockBusy.
func (e *LockBusyError) Is(target error) bool { return target == ErrLockBusy }

// Unwrap returns the last lock timeout.
func (e *LockBusyError) Unwrap() error { return e.Cause }

// The row codec's refusals (rowcodec.go).
var (
	// ErrInvalidPayload: DecodeRow refused a payload upstream's decodeRow
	// refuses too (*RowDecodeError names the column and the byte offset).
	ErrInvalidPayload = errors.New("gosync: invalid row payload")
	// ErrInvalidRow: EncodeRow refused the values (*RowEncodeError names
	// the column).
	ErrInvalidRow = errors.New("gosync: invalid row values")
)

// RowDecodeError: a payload the row codec refuses. Column is the column
// whose value (or null bit) is wrong, "" for the bitmap's padding, a
// truncated bitmap and trailing bytes; Offset is the byte where the fault
// is (the value's start for a bad length, UTF-8 or JSON).
type RowDecodeError struct {
	Column string
	Offset int
	Reason string // upstream's sentence, e.g. "trailing bytes after row payload"
}

// Error names the column (when there is one), the offset and the reason.
func (e *RowDecodeError) Error() string {
	if e.Column == "" {
		return fmt.Sprintf("%s: at byte %d: %s", ErrInvalidPayload, e.Offset, e.Reason)
	}
	return fmt.Sprintf("%s: column %q at byte %d: %s", ErrInvalidPayload, e.Column, e.Offset, e.Reason)
}

// Is matches ErrInvalidPayload.
func (e *RowDecodeError) Is(target error) bool { return target == ErrInvalidPayload }

// RowEncodeError: values EncodeRow refuses (a count mismatch has Column "").
type RowEncodeError struct {
	Column string
	Reason string
}

// Error names the column and the reason.
func (e *RowEncodeError) Error() string {
	if e.Column == "" {
		return fmt.Sprintf("%s: %s", ErrInvalidRow, e.Reason)
	}
	return fmt.Sprintf("%s: column %q: %s", ErrInvalidRow, e.Column, e.Reason)
}

// Is matches ErrInvalidRow.
func (e *RowEncodeError) Is(target error) bool { return target == ErrInvalidRow }
