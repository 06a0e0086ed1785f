package gosync

import (
	"context"
	"fmt"

	"github.com/gosync/gosync/internal/db"
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

// ServeCheck applies the refusal rule for a request to partition: nil means
// serve. The rule lives in SQL, once (sync_serve_check); the first that
// applies wins:
//
//  1. stored schema version ≠ srv.SchemaVersion → RefusalSchema;
//  2. srv.ExpectedEpoch ≠ "" and the partition's log epoch differs (an
//     unregistered partition differs from any) → RefusalEpoch;
//  3. a pending checkpoint (of the running version, not activated) of this
//     partition, the lowest name → RefusalCheckpoint; else the first pending
//     checkpoint elsewhere, by (partition, name), that srv.Declared does not
//     declare (by name for all partitions, or by pair) → RefusalCheckpoint.
//
// It fails closed: an empty declaration set declares nothing. Call it on
// WithTx(tx) to read the gate in the transaction that then serves.
func (s *Store) ServeCheck(ctx context.Context, partition string, srv Server) (*Refusal, error) {
	arg, err := serveCheckParams(partition, srv)
	if err != nil {
		return nil, err
	}
	r, err := s.q.ServeCheck(ctx, s.conn, arg)
	if err != nil {
		return nil, MapError(err)
	}
	return refusalFrom(r.Refusal, r.StoredSchemaVersion, srv.SchemaVersion, r.CheckpointPartition, r.CheckpointName)
}

func serveCheckParams(partition string, srv Server) (db.ServeCheckParams, error) {
	v, err := int32Arg("running_schema_version", srv.SchemaVersion)
	if err != nil {
		return db.ServeCheckParams{}, err
	}
	decl, err := encodeDeclarations(srv.Declared)
	if err != nil {
		return db.ServeCheckParams{}, err
	}
	return db.ServeCheckParams{
		Partition: partition, RunningSchemaVersion: v,
		ExpectedLogEpoch: optional(srv.ExpectedEpoch),
		DeclaredNames:    decl.Names, DeclaredPartitions: decl.Partitions, DeclaredPartitionNames: decl.PartitionNames,
	}, nil
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
