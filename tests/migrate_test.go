package tests

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// TestMigrateRoundTrip: up, down to zero, up, through goose's Provider API
// on the embedded files and through the plain goose CLI on sql/migrations
// (as an operator would). The first up builds exactly the template's
// catalog (gosync.Migrate's, which every other test uses), down to zero
// leaves nothing of gosync behind, and up again rebuilds the same catalog.
func TestMigrateRoundTrip(t *testing.T) {
	t.Parallel()
	type migrator struct{ up, downToZero func() }
	for _, tc := range []struct {
		name string
		open func(t *testing.T, db *pgtest.DB) migrator
	}{
		{"Provider", func(t *testing.T, db *pgtest.DB) migrator {
			ctx := context.Background()
			p, err := gosync.NewMigrator(ctx, db.Pool)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			return migrator{
				up: func() {
					if _, err := p.Up(ctx); err != nil {
						t.Fatal(err)
					}
				},
				downToZero: func() {
					if _, err := p.DownTo(ctx, 0); err != nil {
						t.Fatal(err)
					}
					if v, err := p.GetDBVersion(ctx); err != nil || v != 0 {
						t.Fatalf("version after down to 0 = %d, %v; want 0", v, err)
					}
				},
			}
		}},
		{"goose CLI", func(t *testing.T, db *pgtest.DB) migrator {
			goose := gooseBinary(t)
			run := func(args ...string) {
				t.Helper()
				cmd := exec.Command(goose, append([]string{"-dir", "../sql/migrations", "postgres", db.URL}, args...)...)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("goose %s: %v\n%s", strings.Join(args, " "), err, out)
				}
			}
			return migrator{up: func() { run("up") }, downToZero: func() { run("down-to", "0") }}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want := dumpWholeCatalog(t, pgtest.New(t).Pool)
			db := pgtest.NewEmpty(t)
			m := tc.open(t, db)
			m.up()
			first := dumpWholeCatalog(t, db.Pool)
			assertHasSchema(t, first)
			if first != want {
				t.Fatalf("catalog after up differs from the template's:\n%s", lineDiff(want, first))
			}
			m.downToZero()
			assertNoSchema(t, dumpWholeCatalog(t, db.Pool))
			m.up()
			if again := dumpWholeCatalog(t, db.Pool); again != first {
				t.Fatalf("catalog after up/down/up differs:\n%s", lineDiff(first, again))
			}
		})
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
