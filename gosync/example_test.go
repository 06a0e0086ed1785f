package gosync_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// exampleDB runs fn on a fresh migrated database prepared by setup, and
// prints fn's error: an Example has no testing.T, its output is checked.
func exampleDB(setup string, fn func(ctx context.Context, pool *pgxpool.Pool) error) {
	d, drop, err := pgtest.ForExample()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer drop()
	ctx := context.Background()
	if _, err := d.Pool.Exec(ctx, setup); err != nil {
		fmt.Println(err)
		return
	}
	if err := fn(ctx, d.Pool); err != nil {
		fmt.Println("error:", err)
	}
}

// The README's checkpoint snippet: claim, advance in the batch's own
// transaction, the gate, activation.
func ExampleStore_AdvanceCheckpoint() {
	exampleDB(`INSERT INTO sync_schema_meta VALUES (1, 2, '{"todos": []}'); SELECT sync_declare_checkpoint('p1', 'todos_by_owner', 2)`,
		func(ctx context.Context, pool *pgxpool.Pool) error {
			var watermark, rows int64 // what the batch covers: the log is empty here
			expectedEpoch := ""       // the client's log epoch, "" when it has none
			// README begin
			store := gosync.New(pool)
			cp, err := store.ClaimCheckpoint(ctx, "p1", "todos_by_owner", 2)
			if err != nil {
				return err
			}
			err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				// write the projection batch with tx, then:
				ok, err := store.WithTx(tx).AdvanceCheckpoint(ctx, gosync.CheckpointAdvance{Partition: "p1", Name: "todos_by_owner",
					OwnerEpoch: cp.OwnerEpoch, Watermark: watermark, ObservedRows: rows})
				if err == nil && !ok {
					err = errors.New("another worker claimed the checkpoint") // roll the batch back
				}
				return err
			})
			if err != nil {
				return err
			}
			srv := gosync.Server{SchemaVersion: 2, ExpectedEpoch: expectedEpoch, Declared: []gosync.CheckpointDeclaration{
				{AllPartitions: true, Name: "todos_by_owner", SchemaVersion: 2}}} // or {Partition: "p1", Name: ...}
			refusal, err := store.ServeCheck(ctx, "p1", srv) // sync_serve_check, mapped to a typed *Refusal
			if err != nil {
				return err
			}
			if refusal != nil {
				fmt.Println("closed:", refusal.Kind) // schema, epoch or checkpoint
			}
			result, err := store.ActivateCheckpoint(ctx, gosync.CheckpointActivation{Partition: "p1", Name: "todos_by_owner",
				OwnerEpoch: cp.OwnerEpoch, Watermark: watermark, Sources: []string{"todos"}})
			fmt.Println(result) // activated, or stale / unverifiable
			// README end
			if refusal, err = store.ServeCheck(ctx, "p1", srv); err == nil && refusal == nil {
				fmt.Println("open")
			}
			return err
		})
	// Output:
	// closed: checkpoint
	// activated
	// open
}

// The README's schema-bump snippet: EnsureReady brings the database to the
// server's schema, declaring the projection's backfill.
func ExampleStore_EnsureReady() {
	exampleDB(`CREATE TABLE todos (id text PRIMARY KEY, title text)`, func(ctx context.Context, pool *pgxpool.Pool) error {
		store := gosync.New(pool)
		// README begin
		schema := gosync.Schema{Version: 2, Tables: []gosync.Table{{Name: "todos", Columns: []gosync.Column{
			{Name: "id", Type: gosync.TypeString}, {Name: "title", Type: gosync.TypeString}, {Name: "owner_id", Type: gosync.TypeString, Nullable: true}}}}}
		declared := []gosync.CheckpointDeclaration{{Partition: "p1", Name: "todos_by_owner", SchemaVersion: 2}}
		err := store.EnsureReady(ctx, gosync.ReadyConfig{Schema: schema, Declarations: declared,
			Options: &gosync.SchemaChangeOptions{DDL: func(ctx context.Context, tx pgx.Tx) error {
				_, err := tx.Exec(ctx, "ALTER TABLE todos ADD COLUMN IF NOT EXISTS owner_id text")
				return err
			}}})
		// README end
		if err != nil {
			return err
		}
		cp, err := store.Checkpoint(ctx, "p1", "todos_by_owner")
		fmt.Println(cp.Partition, cp.Name, cp.SchemaVersion, cp.State)
		return err
	})
	// Output:
	// p1 todos_by_owner 2 declared
}

// TestREADMESnippets: every "README begin/end" region of the examples is a
// Go block of README.md, verbatim (less the examples' indentation), so the
// README's snippets are the code `go test` runs.
func TestREADMESnippets(t *testing.T) {
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	regions := regexp.MustCompile(`(?s)\n(\t+)// README begin\n(.*?)\n\t+// README end\n`).FindAllStringSubmatch(string(src), -1)
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	if len(regions) != 2 || len(blocks) != len(regions) {
		t.Fatalf("%d README regions in the examples, %d Go blocks in README.md; want 2 of each", len(regions), len(blocks))
	}
	for i, r := range regions {
		lines := strings.Split(r[2], "\n")
		for j, l := range lines {
			lines[j] = strings.TrimPrefix(l, r[1])
		}
		want := strings.Join(lines, "\n") + "\n"
		if blocks[i][1] != want {
			t.Errorf("README.md Go block %d differs from example region %d; the example (which go test runs) is:\n%s", i+1, i+1, want)
		}
	}
}
