package tests

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// hostileNames are stored verbatim and never executed.
var hostileNames = []string{
	`it's`, `a;b`, `back\slash`, `"quoted"`, `'); DROP TABLE sync_commits; --`,
	`SELECT`, `%s %I $1 $$`, "ünïcødé 漢字 🚀", "tab\tnew\nline", strings.Repeat("x", 512),
}

// TestHostileInput: hostile partition, checkpoint and source names
// round-trip exactly and are never executed, through the Go API and as
// literals in SQL text (the simple protocol, as psql sends them) through the
// SQL functions; over-long ones and NUL bytes are refused with
// ErrInvalidArgument. Afterwards the log tables exist and exactly the
// expected checkpoints are stored.
func TestHostileInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, ctx context.Context, d *pgtest.DB)
	}{
		{"Go API", func(t *testing.T, ctx context.Context, d *pgtest.DB) {
			s := gosync.New(d.Pool)
			for _, name := range hostileNames {
				cp, err := s.DeclareCheckpoint(ctx, name, name, 2)
				if err != nil {
					t.Fatalf("declare %q: %v", name, err)
				}
				if cp.Partition != name || cp.Name != name {
					t.Fatalf("declare %q stored %q / %q", name, cp.Partition, cp.Name)
				}
				claimed, err := s.ClaimCheckpoint(ctx, name, name, 2)
				if err != nil {
					t.Fatalf("claim %q: %v", name, err)
				}
				// Sources are tables of the stored schema: a marker naming them
				// for the activation, gone again for the push below.
				storeTables(t, d, 2, hostileNames...)
				if r, err := s.ActivateCheckpoint(ctx, gosync.CheckpointActivation{Partition: name, Name: name, OwnerEpoch: claimed.OwnerEpoch, Watermark: 0, Sources: hostileNames}); err != nil || r != gosync.ActivationActivated {
					t.Fatalf("activate %q with hostile sources: %q, %v", name, r, err)
				}
				mustExec(t, d.Pool, `DELETE FROM sync_schema_meta`)
				// No marker (version 0) and the fence at 2: the push reaches the
				// database and the fence refuses it, by its rules only.
				if _, err := s.Push(ctx, name, todoCommit("hostile", 1), gosync.Server{SchemaVersion: 0}); !errors.Is(err, gosync.ErrWriterFenceRejected) {
					t.Fatalf("push to %q: %v, want the fence", name, err)
				}
			}
			for _, bad := range []string{strings.Repeat("x", 513), strings.Repeat("é", 10000), "nul\x00byte"} {
				_, err := s.DeclareCheckpoint(ctx, bad, "n", 2)
				if !errors.Is(err, gosync.ErrInvalidArgument) {
					t.Fatalf("declare %.20q...: %v, want ErrInvalidArgument", bad, err)
				}
				if strings.Contains(bad, "\x00") && !strings.Contains(err.Error(), "NUL") {
					t.Fatalf("NUL byte error does not say so: %v", err)
				}
			}
		}},
		{"SQL", func(t *testing.T, ctx context.Context, d *pgtest.DB) {
			for _, name := range hostileNames {
				var stored string
				err := d.Pool.QueryRow(ctx, "SELECT partition || '|' || name FROM sync_declare_checkpoint($1, $2, 2)",
					pgx.QueryExecModeSimpleProtocol, name, name).Scan(&stored)
				if err != nil || stored != name+"|"+name {
					t.Fatalf("declare %q through SQL: %q, %v", name, stored, err)
				}
				var coverage string
				if err := d.Pool.QueryRow(ctx, "SELECT sync_source_changes_above($1, $2, 0)",
					pgx.QueryExecModeSimpleProtocol, name, hostileNames).Scan(&coverage); err != nil || coverage != "clean" {
					t.Fatalf("coverage of %q: %q, %v", name, coverage, err)
				}
			}
			_, err := d.Pool.Exec(ctx, "SELECT sync_declare_checkpoint(repeat('x', 10000), 'n', 2)")
			if !errors.Is(gosync.MapError(err), gosync.ErrInvalidArgument) {
				t.Fatalf("10,000-character partition through SQL: %v", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := pgtest.New(t)
			tc.run(t, context.Background(), d)
			assertLogIntact(t, d, len(hostileNames))
		})
	}
}

// assertLogIntact: the tables a hostile string names still exist, and
// exactly the expected checkpoints were stored.
func assertLogIntact(t *testing.T, d *pgtest.DB, checkpoints int) {
	t.Helper()
	var n int
	if err := d.Pool.QueryRow(context.Background(), "SELECT count(*) FROM sync_backfill_checkpoints").Scan(&n); err != nil {
		t.Fatalf("the log tables after hostile input: %v", err)
	}
	if n != checkpoints {
		t.Fatalf("%d checkpoints stored, want %d", n, checkpoints)
	}
	if err := d.Pool.QueryRow(context.Background(), "SELECT count(*) FROM sync_commits").Scan(&n); err != nil {
		t.Fatalf("sync_commits after hostile input: %v", err)
	}
}
