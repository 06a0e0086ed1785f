package tests

import (
	"os"
	"strings"
	"testing"

	"github.com/gosync/gosync/internal/pgtest"
)

// TestCatalogMatchesDesign reads pg_catalog after migrating and compares it,
// line for line, with testdata/catalog.txt: every table, column, type,
// nullability, default, primary key, CHECK constraint, secondary index (with
// its column order) and the writer fence trigger.
func TestCatalogMatchesDesign(t *testing.T) {
	db := pgtest.New(t)
	raw, err := os.ReadFile("testdata/catalog.txt")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if !strings.HasPrefix(line, "# ") {
			want = append(want, line)
		}
	}
	got := dumpWholeCatalog(t, db.Pool)
	got = got[:strings.Index(got, "## functions")]
	if g, w := strings.TrimSpace(got), strings.Join(want, "\n"); g != w {
		t.Errorf("catalog differs from DESIGN.md section 2:\n%s", lineDiff(w, g))
	}
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
	inGot := map[string]bool{}
	for _, l := range strings.Split(got, "\n") {
		inGot[l] = true
	}
	inWant := map[string]bool{}
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		inWant[l] = true
		if !inGot[l] {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if !inWant[l] {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}
