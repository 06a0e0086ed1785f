package gosync

import (
	"context"
	"errors"
)

// ReadinessPhase says which start-up step failed.
type ReadinessPhase string

// The start-up phases, as upstream names them.
const (
	PhaseSchemaCompile      ReadinessPhase = "schema_compile"      // the configured schema is invalid
	PhaseStorageMigration   ReadinessPhase = "storage_migration"   // the database could not be brought to the schema
	PhaseBackfillCheckpoint ReadinessPhase = "backfill_checkpoint" // an undeclared checkpoint is incomplete
)

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
	if err := s.checkFenceGuard(ctx); err != nil {
		return &ReadinessError{Phase: PhaseStorageMigration, SchemaVersion: cfg.Schema.Version, Cause: err}
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
