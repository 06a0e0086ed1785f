package tests

import (
	"context"
	"errors"
	"testing"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// TestRemoveCheckpoint: a sync_admin login undoes a mistaken declare: the
// checkpoint goes, the gate stops waiting for it, the fence stays; an
// activated checkpoint and a missing one are refused with typed errors and
// nothing changes; no other role may remove one.
func TestRemoveCheckpoint(t *testing.T) {
	ctx := context.Background()
	d := pgtest.New(t)
	mustExec(t, d.Pool, `INSERT INTO sync_schema_meta VALUES (1, 2, '{"todos": []}');
		SELECT sync_declare_checkpoint('p1', 'typo', 2);
		SELECT sync_declare_checkpoint('p1', 'done', 2);
		SELECT sync_claim_checkpoint('p1', 'done', 2);
		SELECT sync_activate_checkpoint('p1', 'done', 1, 0, ARRAY['todos'])`)
	admin := gosync.New(loginAs(t, d, "sync_admin", nil))
	v2 := gosync.Server{SchemaVersion: 2}
	if r, err := admin.ServeCheck(ctx, "p1", v2); err != nil || r == nil || r.Checkpoint.Name != "typo" {
		t.Fatalf("before the removal the gate refuses on typo: %+v, %v", r, err)
	}
	cp, err := admin.RemoveCheckpoint(ctx, "p1", "typo")
	if err != nil || cp.Name != "typo" || cp.State != gosync.StateDeclared {
		t.Fatalf("remove: %+v, %v", cp, err)
	}
	if r, err := admin.ServeCheck(ctx, "p1", v2); err != nil || r != nil {
		t.Fatalf("after the removal the gate opens: %+v, %v", r, err)
	}
	if fence := fenceOf(t, d.Pool, "p1"); fence != 2 {
		t.Fatalf("fence after the removal: %d; want 2 (never lowered)", fence)
	}
	if _, err := admin.RemoveCheckpoint(ctx, "p1", "typo"); !errors.Is(err, gosync.ErrCheckpointNotDeclared) {
		t.Fatalf("remove a missing checkpoint: %v", err)
	}
	if _, err := admin.RemoveCheckpoint(ctx, "p1", "done"); !errors.Is(err, gosync.ErrCheckpointActivated) {
		t.Fatalf("remove an activated checkpoint: %v", err)
	}
	if cp, err := admin.Checkpoint(ctx, "p1", "done"); err != nil || cp.State != gosync.StateActivated {
		t.Fatalf("the activated checkpoint after the refused removal: %+v, %v", cp, err)
	}
	mustExec(t, d.Pool, "SELECT sync_declare_checkpoint('p1', 'typo', 2)")
	for _, group := range []string{"sync_reader", "sync_writer", "sync_backfill"} {
		_, err := gosync.New(loginAs(t, d, group, nil)).RemoveCheckpoint(ctx, "p1", "typo")
		if sqlState(err) != "42501" {
			t.Errorf("%s removed a checkpoint: %v, want permission denied", group, err)
		}
	}
}
