package tests

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

func TestServeGate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	s := gosync.New(d.Pool)

	g, err := s.ServeGate(ctx, "p1", gosync.Server{SchemaVersion: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, gosync.ServeGate{Pending: []gosync.CheckpointRef{}}) {
		t.Fatalf("empty database gate = %+v", g)
	}
	if r, err := s.ServeCheck(ctx, "p1", gosync.Server{SchemaVersion: 2}); err != nil || r == nil || r.Kind != gosync.RefusalSchema || r.StoredSchemaVersion != 0 {
		t.Fatalf("no marker: refusal = %+v, want schema 0 vs 2", r)
	}

	mustExec(t, d.Pool, `INSERT INTO sync_schema_meta VALUES (1, 2, '{"todos": []}');
		INSERT INTO sync_partition_registry VALUES ('p1', 'e1', false, 0)`)
	for _, c := range []struct {
		partition, name string
		version         int64
	}{{"p2", "b", 2}, {"p1", "a", 2}, {"p0", "z", 3}, {"p1", "c", 2}} {
		if _, err := s.DeclareCheckpoint(ctx, c.partition, c.name, c.version); err != nil {
			t.Fatal(err)
		}
	}
	cp, err := s.ClaimCheckpoint(ctx, "p1", "c", 2)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := s.ActivateCheckpoint(ctx, gosync.CheckpointActivation{Partition: "p1", Name: "c", OwnerEpoch: cp.OwnerEpoch, Watermark: 0, Sources: []string{"todos"}}); err != nil || r != gosync.ActivationActivated {
		t.Fatalf("activate = %q, %v", r, err)
	}

	g, err = s.ServeGate(ctx, "p1", gosync.Server{SchemaVersion: 2})
	if err != nil {
		t.Fatal(err)
	}
	p1a, p2b := gosync.CheckpointRef{Partition: "p1", Name: "a"}, gosync.CheckpointRef{Partition: "p2", Name: "b"}
	want := gosync.ServeGate{StoredSchemaVersion: 2, LogEpoch: "e1", Registered: true, Pending: []gosync.CheckpointRef{p1a, p2b}}
	if !reflect.DeepEqual(g, want) {
		t.Fatalf("gate = %+v\nwant   %+v (ordered, only version 2, activated left out)", g, want)
	}

	pair := func(r gosync.CheckpointRef) gosync.CheckpointDeclaration {
		return gosync.CheckpointDeclaration{Partition: r.Partition, Name: r.Name, SchemaVersion: 2}
	}
	everywhere := func(name string) gosync.CheckpointDeclaration {
		return gosync.CheckpointDeclaration{AllPartitions: true, Name: name, SchemaVersion: 2}
	}
	both := []gosync.CheckpointDeclaration{pair(p1a), pair(p2b)}
	for _, tc := range []struct {
		name      string
		running   int64
		declared  []gosync.CheckpointDeclaration
		partition string
		epoch     string
		want      *gosync.Refusal
	}{
		{"schema first", 3, both, "p3", "e0", &gosync.Refusal{Kind: gosync.RefusalSchema, StoredSchemaVersion: 2, RunningSchemaVersion: 3}},
		{"then epoch", 2, both, "p1", "e0", &gosync.Refusal{Kind: gosync.RefusalEpoch}},
		{"then own pending checkpoint", 2, both, "p1", "e1", &gosync.Refusal{Kind: gosync.RefusalCheckpoint, Checkpoint: p1a}},
		{"other partitions' declared checkpoints", 2, both, "p3", "", nil},
		{"undeclared elsewhere", 2, []gosync.CheckpointDeclaration{pair(p1a)}, "p3", "", &gosync.Refusal{Kind: gosync.RefusalCheckpoint, Checkpoint: p2b}},
		{"declared by name for every partition", 2, []gosync.CheckpointDeclaration{everywhere("a"), everywhere("b")}, "p3", "", nil},
		{"a name declares only itself", 2, []gosync.CheckpointDeclaration{everywhere("a")}, "p3", "", &gosync.Refusal{Kind: gosync.RefusalCheckpoint, Checkpoint: p2b}},
		{"own partition before a lower undeclared one", 2, nil, "p2", "", &gosync.Refusal{Kind: gosync.RefusalCheckpoint, Checkpoint: p2b}},
		{"fail closed", 2, nil, "p3", "", &gosync.Refusal{Kind: gosync.RefusalCheckpoint, Checkpoint: p1a}},
	} {
		srv := gosync.Server{SchemaVersion: tc.running, Declared: tc.declared, ExpectedEpoch: tc.epoch}
		got, err := s.ServeCheck(ctx, tc.partition, srv)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: refusal = %+v, want %+v", tc.name, got, tc.want)
		}
	}
	// An ambiguous declaration is refused before anything is read.
	bad := gosync.Server{SchemaVersion: 2, Declared: []gosync.CheckpointDeclaration{{Partition: "p1", AllPartitions: true, Name: "a"}}}
	if _, err := s.ServeCheck(ctx, "p1", bad); !errors.Is(err, gosync.ErrInvalidArgument) {
		t.Fatalf("a declaration of one partition and all partitions: %v, want ErrInvalidArgument", err)
	}
}

// TestServeGateOnCallerTransaction: a gate read through WithTx sees the
// transaction's own uncommitted state, and other connections do not.
func TestServeGateOnCallerTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	s := gosync.New(d.Pool)
	err := pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		if _, err := s.WithTx(tx).DeclareCheckpoint(ctx, "p1", "a", 1); err != nil {
			return err
		}
		inside, err := s.WithTx(tx).ServeGate(ctx, "p1", gosync.Server{SchemaVersion: 1})
		if err != nil {
			return err
		}
		outside, err := s.ServeGate(ctx, "p1", gosync.Server{SchemaVersion: 1})
		if err != nil {
			return err
		}
		if len(inside.Pending) != 1 || len(outside.Pending) != 0 {
			t.Errorf("pending inside the tx = %v, outside = %v; want 1 and 0", inside.Pending, outside.Pending)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
