package tests

import (
	"context"
	"strings"
	"testing"

	"github.com/gosync/gosync/internal/pgtest"
)

// TestCoverageCheckUsesIndex proves the activation coverage check is
// index-driven: auto_explain reports, as NOTICEs to this session, the plans
// of the statements inside sync_source_changes_above (custom plans first,
// then the cached generic plan), and none of them reads sync_changes with a
// sequential scan.
func TestCoverageCheckUsesIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	fillChanges(t, d.Pool, 100_000)

	conn, plans := explainingConn(t, d.URL)
	// More than five calls: plpgsql switches to a generic plan after five.
	for i := 0; i < 8; i++ {
		var r string
		if err := conn.QueryRow(ctx, "SELECT sync_source_changes_above('p', '{todos}', 100000)").Scan(&r); err != nil || r != "clean" {
			t.Fatalf("coverage = %q, %v", r, err)
		}
	}
	var scans int
	seen := plans()
	for _, p := range seen {
		if !strings.Contains(p, "sync_changes ch") {
			continue
		}
		scans++
		if strings.Contains(p, "Seq Scan on sync_changes") || !strings.Contains(p, "Index") {
			t.Fatalf("coverage check plan is not index-driven:\n%s", p)
		}
	}
	if scans < 8 {
		t.Fatalf("auto_explain reported %d coverage scans, want 8 (plans seen: %d)", scans, len(seen))
	}
	t.Logf("plan:\n%s", seen[len(seen)-2])
}
