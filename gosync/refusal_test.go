package gosync

import (
	"errors"
	"reflect"
	"testing"
)

func TestRefusalFrom(t *testing.T) {
	for _, tc := range []struct {
		kind string
		want *Refusal
	}{
		{"", nil},
		{"schema", &Refusal{Kind: RefusalSchema, StoredSchemaVersion: 1, RunningSchemaVersion: 2}},
		{"epoch", &Refusal{Kind: RefusalEpoch}},
		{"checkpoint", &Refusal{Kind: RefusalCheckpoint, Checkpoint: CheckpointRef{Partition: "p", Name: "n"}}},
	} {
		got, err := refusalFrom(tc.kind, 1, 2, "p", "n")
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("refusalFrom(%q) = %+v, %v; want %+v", tc.kind, got, err, tc.want)
		}
	}
	if _, err := refusalFrom("later", 1, 2, "", ""); err == nil {
		t.Fatal("an unknown refusal kind was accepted")
	}
}

func TestEncodeDeclarations(t *testing.T) {
	got, err := encodeDeclarations([]CheckpointDeclaration{
		{Partition: "p1", Name: "a"}, {AllPartitions: true, Name: "b"}, {Partition: "p2", Name: "a"}})
	want := declarationArrays{Names: []string{"b"}, Partitions: []string{"p1", "p2"}, PartitionNames: []string{"a", "a"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("encode = %+v, %v; want %+v", got, err, want)
	}
	if got, err := encodeDeclarations(nil); err != nil || got.Names == nil || got.Partitions == nil || got.PartitionNames == nil {
		t.Fatalf("nothing declared must travel as empty arrays, not NULL: %+v, %v", got, err)
	}
	for _, bad := range []CheckpointDeclaration{{Name: "a"}, {Partition: "p", AllPartitions: true, Name: "a"}, {Partition: "p"}} {
		if _, err := encodeDeclarations([]CheckpointDeclaration{bad}); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("encode %+v: %v, want ErrInvalidArgument", bad, err)
		}
	}
}
