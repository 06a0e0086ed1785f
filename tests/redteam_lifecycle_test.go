package tests

// Red team, issue 17 sections 4, 5 (the prune race) and 7: the checkpoint
// lifecycle's time, epochs, sources, leases, the '' checkpoint and an apply
// that ends its batch's transaction. Each attack runs with the documented
// roles and asserts that a refusal changed nothing.

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/gosync/gosync/internal/pgtest"
)

// storeTables writes the schema marker as the superuser (an existing one
// keeps its version), its layouts listing tables: activation checks its
// sources against them.
func storeTables(t *testing.T, d *pgtest.DB, version int64, tables ...string) {
	t.Helper()
	layouts := map[string][]any{}
	for _, tb := range tables {
		layouts[tb] = []any{}
	}
	j, err := json.Marshal(layouts)
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, d.Pool, `INSERT INTO sync_schema_meta VALUES (1, $1, $2)
		ON CONFLICT (id) DO UPDATE SET layouts = EXCLUDED.layouts`, version, string(j))
	_ = context.Background
}
