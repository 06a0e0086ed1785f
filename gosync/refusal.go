package gosync

// RefusalKind says why the gate is closed.
type RefusalKind string

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
	// For RefusalCheckpoint: the first pending checkpoint that closes the gate.
	Checkpoint CheckpointRef
}

// EvaluateGate applies the refusal rule to a gate read for partition; nil
// means serve. The first matching rule wins:
//
//  1. stored schema version ≠ running → RefusalSchema;
//  2. the caller expects a log epoch (expectedEpoch ≠ "") and the stored one
//     differs (an unregistered partition differs from any) → RefusalEpoch;
//  3. a pending checkpoint of this partition, or a pending checkpoint
//     anywhere that the caller did not declare → RefusalCheckpoint.
//
// It fails closed: an empty declaration set declares nothing. This is the
// only implementation of the rule; push, read and readiness all call it.
func EvaluateGate(gate ServeGate, running int64, declared []CheckpointRef, partition, expectedEpoch string) *Refusal {
	if gate.StoredSchemaVersion != running {
		return &Refusal{Kind: RefusalSchema, StoredSchemaVersion: gate.StoredSchemaVersion, RunningSchemaVersion: running}
	}
	if expectedEpoch != "" && (!gate.Registered || gate.LogEpoch != expectedEpoch) {
		return &Refusal{Kind: RefusalEpoch}
	}
	for _, p := range gate.Pending {
		if p.Partition == partition || !containsRef(declared, p) {
			return &Refusal{Kind: RefusalCheckpoint, Checkpoint: p}
		}
	}
	return nil
}

func containsRef(refs []CheckpointRef, r CheckpointRef) bool {
	for _, x := range refs {
		if x == r {
			return true
		}
	}
	return false
}
