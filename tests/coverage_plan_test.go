package tests

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gosync/gosync/internal/pgtest"
)

// TestCoverageCheckUsesIndex proves the activation coverage check is
// index-driven: auto_explain reports, as NOTICEs to this session, the plans
// of the statements inside sync_source_changes_above (custom plans first,
// then the cached generic plan), and none of them reads sync_changes with a
// sequential scan.
func TestCoverageCheckUsesIndex(t *testing.T) {
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

// explainingConn opens a connection on which auto_explain reports the plan
// of every statement, nested ones (inside functions) included, as a NOTICE
// (with extra settings, e.g. auto_explain.log_analyze); plans returns the
// plans reported so far. It is closed when the test ends.
func explainingConn(t *testing.T, url string, extra ...string) (*pgx.Conn, func() []string) {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	var plans []string
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		defer mu.Unlock()
		plans = append(plans, n.Message)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	for _, s := range append([]string{"LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0",
		"SET auto_explain.log_nested_statements = on", "SET auto_explain.log_level = notice"}, extra...) {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return conn, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), plans...)
	}
}
