package tests

import "github.com/gosync/gosync/gosync"

// evaluateGateOracle is the refusal rule as Go implemented it before the
// rule moved into SQL (sync_serve_check), kept verbatim as the oracle of
// TestServeCheckMatchesOracle. It walks the pending list in the order given.
func evaluateGateOracle(gate gosync.ServeGate, running int64, declared []gosync.CheckpointRef, partition, expectedEpoch string) *gosync.Refusal {
	if gate.StoredSchemaVersion != running {
		return &gosync.Refusal{Kind: gosync.RefusalSchema, StoredSchemaVersion: gate.StoredSchemaVersion, RunningSchemaVersion: running}
	}
	if expectedEpoch != "" && (!gate.Registered || gate.LogEpoch != expectedEpoch) {
		return &gosync.Refusal{Kind: gosync.RefusalEpoch}
	}
	for _, p := range gate.Pending {
		if p.Partition == partition || !containsRef(declared, p) {
			return &gosync.Refusal{Kind: gosync.RefusalCheckpoint, Checkpoint: p}
		}
	}
	return nil
}

func containsRef(refs []gosync.CheckpointRef, r gosync.CheckpointRef) bool {
	for _, x := range refs {
		if x == r {
			return true
		}
	}
	return false
}
