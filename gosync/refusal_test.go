package gosync

import (
	"reflect"
	"testing"
)

func TestEvaluateGate(t *testing.T) {
	p1a := CheckpointRef{Partition: "p1", Name: "a"}
	p2b := CheckpointRef{Partition: "p2", Name: "b"}
	open := ServeGate{StoredSchemaVersion: 2, LogEpoch: "e1", Registered: true}
	withPending := func(g ServeGate, p ...CheckpointRef) ServeGate { g.Pending = p; return g }

	for _, tc := range []struct {
		name     string
		gate     ServeGate
		running  int64
		declared []CheckpointRef
		epoch    string
		want     *Refusal
	}{
		{"open", open, 2, nil, "", nil},
		{"open with the expected epoch", open, 2, nil, "e1", nil},
		{"stored older", open, 3, nil, "", &Refusal{Kind: RefusalSchema, StoredSchemaVersion: 2, RunningSchemaVersion: 3}},
		{"stored newer", open, 1, nil, "", &Refusal{Kind: RefusalSchema, StoredSchemaVersion: 2, RunningSchemaVersion: 1}},
		{"no marker", ServeGate{}, 1, nil, "", &Refusal{Kind: RefusalSchema, StoredSchemaVersion: 0, RunningSchemaVersion: 1}},
		{"epoch differs", open, 2, nil, "e0", &Refusal{Kind: RefusalEpoch}},
		{"epoch expected, partition unregistered", ServeGate{StoredSchemaVersion: 2}, 2, nil, "e1", &Refusal{Kind: RefusalEpoch}},
		{"no epoch expected, partition unregistered", ServeGate{StoredSchemaVersion: 2}, 2, nil, "", nil},
		{"pending in this partition, declared", withPending(open, p1a), 2, []CheckpointRef{p1a}, "", &Refusal{Kind: RefusalCheckpoint, Checkpoint: p1a}},
		{"pending elsewhere, declared", withPending(open, p2b), 2, []CheckpointRef{p2b}, "", nil},
		{"pending elsewhere, undeclared", withPending(open, p2b), 2, []CheckpointRef{p1a}, "", &Refusal{Kind: RefusalCheckpoint, Checkpoint: p2b}},
		{"fail closed: empty declaration set", withPending(open, p2b), 2, []CheckpointRef{}, "", &Refusal{Kind: RefusalCheckpoint, Checkpoint: p2b}},
		{"first pending wins", withPending(open, p1a, p2b), 2, nil, "", &Refusal{Kind: RefusalCheckpoint, Checkpoint: p1a}},
		{"schema before epoch", open, 3, nil, "e0", &Refusal{Kind: RefusalSchema, StoredSchemaVersion: 2, RunningSchemaVersion: 3}},
		{"epoch before checkpoint", withPending(open, p1a), 2, nil, "e0", &Refusal{Kind: RefusalEpoch}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := EvaluateGate(tc.gate, tc.running, tc.declared, "p1", tc.epoch)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("EvaluateGate = %+v, want %+v", got, tc.want)
			}
		})
	}
}
