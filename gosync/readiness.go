package gosync

import (
	"context"
	"errors"
	"fmt"
)

// ReadinessPhase says which start-up step failed.
type ReadinessPhase string

// The start-up phases, as upstream names them.
const (
	PhaseSchemaCompile      ReadinessPhase = "schema_compile"      // the configured schema is invalid
	PhaseStorageMigration   ReadinessPhase = "storage_migration"   // the database could not be brought to the schema
	PhaseBackfillCheckpoint ReadinessPhase = "backfill_checkpoint" // an undeclared checkpoint is incomplete
)

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

// ReadyConfig is what a server starts with.
type ReadyConfig struct {
	Schema       Schema
	Declarations []CheckpointDeclaration
	Options      *SchemaChangeOptions
}

// EnsureReady brings the database to cfg.Schema (EnsureSchema) and reports
// any failure as a *ReadinessError with its phase: an incomplete checkpoint
// is a barrier refusal (backfill_checkpoint), not a migration failure.
func (s *Store) EnsureReady(ctx context.Context, cfg ReadyConfig) error {
	if err := cfg.Schema.Validate(); err != nil {
		return &ReadinessError{Phase: PhaseSchemaCompile, SchemaVersion: cfg.Schema.Version, Cause: err}
	}
	if err := s.EnsureSchema(ctx, cfg.Schema, cfg.Declarations, cfg.Options); err != nil {
		phase := PhaseStorageMigration
		if errors.Is(err, ErrCheckpointIncomplete) {
			phase = PhaseBackfillCheckpoint
		}
		return &ReadinessError{Phase: phase, SchemaVersion: cfg.Schema.Version, Cause: err}
	}
	return nil
}

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
