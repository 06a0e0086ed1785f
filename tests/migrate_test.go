package tests

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// TestMigrateRoundTripProvider: up, down to zero, up through goose's Provider
// API on the embedded files leaves the catalog exactly as the first up did,
// and down to zero leaves nothing of gosync behind.
func TestMigrateRoundTripProvider(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.NewEmpty(t)
	p, err := gosync.NewMigrator(ctx, db.Pool)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	first := dumpWholeCatalog(t, db.Pool)
	assertHasSchema(t, first)
	if _, err := p.DownTo(ctx, 0); err != nil {
		t.Fatal(err)
	}
	assertNoSchema(t, dumpWholeCatalog(t, db.Pool))
	if v, err := p.GetDBVersion(ctx); err != nil || v != 0 {
		t.Fatalf("version after down to 0 = %d, %v; want 0", v, err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if again := dumpWholeCatalog(t, db.Pool); again != first {
		t.Fatalf("catalog after up/down/up differs:\n%s", lineDiff(first, again))
	}
}

// TestMigrateRoundTripGooseCLI does the same with the plain goose CLI on
// sql/migrations, as an operator would, and checks it builds the same catalog
// as the Provider API (the template every other test uses).
func TestMigrateRoundTripGooseCLI(t *testing.T) {
	t.Parallel()
	goose := gooseBinary(t)
	migrated := pgtest.New(t)
	want := dumpWholeCatalog(t, migrated.Pool)

	db := pgtest.NewEmpty(t)
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(goose, append([]string{"-dir", "../sql/migrations", "postgres", db.URL}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("goose %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("up")
	first := dumpWholeCatalog(t, db.Pool)
	if first != want {
		t.Fatalf("goose CLI and Provider catalogs differ:\n%s", lineDiff(want, first))
	}
	run("down-to", "0")
	assertNoSchema(t, dumpWholeCatalog(t, db.Pool))
	run("up")
	if again := dumpWholeCatalog(t, db.Pool); again != first {
		t.Fatalf("catalog after goose up/down/up differs:\n%s", lineDiff(first, again))
	}
}

func assertHasSchema(t *testing.T, catalog string) {
	t.Helper()
	for _, s := range []string{"sync_commits.writer_version bigint", "sync_commits_writer_fence", "FUNCTION public.syncular_writer_fence()"} {
		if !strings.Contains(catalog, s) {
			t.Fatalf("migrated catalog lacks %q", s)
		}
	}
}

func assertNoSchema(t *testing.T, catalog string) {
	t.Helper()
	for _, line := range strings.Split(catalog, "\n") {
		if line != "" && !strings.HasPrefix(line, "## ") {
			t.Fatalf("down to 0 left %q behind", line)
		}
	}
}
