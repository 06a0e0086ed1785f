package tests

import (
	"context"
	"errors"
	"testing"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// TestAppGooseMigrationBumpsSchema applies the example application's goose
// migrations on top of gosync's: v1, some v1 commits, then the v2 bump that
// alters the app table, writes the marker and declares the checkpoint with
// its fence, all in goose's one transaction.
func TestAppGooseMigrationBumpsSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	p := appMigrationsAtV1(t, d)
	s := gosync.New(d.Pool)
	for _, partition := range []string{"p1", "p2"} {
		if _, err := s.Push(ctx, partition, todoCommit("v1-"+partition, 1), serverV1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}

	decl := []gosync.CheckpointDeclaration{
		{Partition: "p1", Name: "todos_by_owner", SchemaVersion: 2},
		{Partition: "p2", Name: "todos_by_owner", SchemaVersion: 2},
	}
	// A v2 server finds exactly the schema it expects, physical columns included.
	if err := s.EnsureSchema(ctx, todosSchema(2), decl, nil); err != nil {
		t.Fatalf("EnsureSchema after the app migration: %v", err)
	}
	for _, partition := range []string{"p1", "p2"} {
		if f := fenceOf(t, d.Pool, partition); f != 2 {
			t.Fatalf("fence of %s = %d, want 2", partition, f)
		}
		cp, err := s.Checkpoint(ctx, partition, "todos_by_owner")
		if err != nil || cp.State != gosync.StateDeclared {
			t.Fatalf("checkpoint of %s = %+v, %v", partition, cp, err)
		}
		if _, err := oldWriterCommit(ctx, d.Pool, partition, v(1)); !errors.Is(err, gosync.ErrWriterFenceRejected) {
			t.Fatalf("v1 writer in %s after the migration: %v", partition, err)
		}
	}
	// A v1 server is refused at start-up and at serve time.
	if err := s.EnsureSchema(ctx, todosSchema(1), nil, nil); !errors.Is(err, gosync.ErrSchemaTooNew) {
		t.Fatalf("v1 EnsureSchema: %v", err)
	}
	// The way down is refused with a reason, and changes nothing.
	if _, err := p.Down(ctx); err == nil {
		t.Fatal("down migration of a schema bump succeeded")
	}
	if version := schemaVersion(t, d.Pool); version != 2 {
		t.Fatalf("marker after the refused down: %d", version)
	}
}
