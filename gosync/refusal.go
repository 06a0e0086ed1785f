package gosync

import (
	"fmt"
)

// RefusalKind says why the gate is closed.
type RefusalKind string

// The refusals, in the order the rule applies them.
const (
	// RefusalSchema: the stored schema version is not the running one.
	RefusalSchema RefusalKind = "schema"
	// RefusalEpoch: the partition's log epoch is not the one the caller expects.
	RefusalEpoch RefusalKind = "epoch"
	// RefusalCheckpoint: a projection this request may depend on is still backfilling.
	RefusalCheckpoint RefusalKind = "checkpoint"
)

// Refusal is a closed gate with its details.
type Refusal struct {
	Kind RefusalKind
	// For RefusalSchema.
	StoredSchemaVersion, RunningSchemaVersion int64
	// For RefusalCheckpoint: the pending checkpoint that closes the gate.
	Checkpoint CheckpointRef
}

// refusalFrom maps the refusal columns sync_serve_check (and sync_push)
// return to the typed refusal; "" is an open gate.
func refusalFrom(kind string, stored, running int64, cpPartition, cpName string) (*Refusal, error) {
	switch RefusalKind(kind) {
	case "":
		return nil, nil
	case RefusalSchema:
		return &Refusal{Kind: RefusalSchema, StoredSchemaVersion: stored, RunningSchemaVersion: running}, nil
	case RefusalEpoch:
		return &Refusal{Kind: RefusalEpoch}, nil
	case RefusalCheckpoint:
		return &Refusal{Kind: RefusalCheckpoint, Checkpoint: CheckpointRef{Partition: cpPartition, Name: cpName}}, nil
	}
	return nil, fmt.Errorf("gosync: the serve check answered an unknown refusal %q", kind)
}

// notReady is refusalFrom for the paths that serve (Push,
// ReadAuthoritative): a refusal becomes a *NotReadyError, an open gate nil.
func notReady(kind string, stored, running int64, cpPartition, cpName string) error {
	refusal, err := refusalFrom(kind, stored, running, cpPartition, cpName)
	if err != nil || refusal == nil {
		return err
	}
	return &NotReadyError{Refusal: *refusal}
}
