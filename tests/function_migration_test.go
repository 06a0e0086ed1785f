package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/gosync/gosync/internal/fnmigration"
	"github.com/gosync/gosync/internal/pgtest"
)

// copySQL copies sql/migrations and sql/functions into a temp dir and
// returns it.
func copySQL(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, sub := range []string{"migrations", "functions"} {
		if err := os.CopyFS(filepath.Join(dir, sub), os.DirFS(filepath.Join("..", "sql", sub))); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func editFile(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s lacks %q", path, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tempMigrator runs the migrations in dir with plain goose.
func tempMigrator(t *testing.T, d *pgtest.DB, dir string) *goose.Provider {
	t.Helper()
	p, err := goose.NewProvider(goose.DialectPostgres, stdlib.OpenDBFromPool(d.Pool), os.DirFS(dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// canonicalDrift applies the canonical files in functions (a directory) in
// a rolled-back transaction and returns the functions whose definition or
// grants that changes: none when the database runs exactly those files
// (TestMigratedFunctionsAreCanonical's view).
func canonicalDrift(t *testing.T, d *pgtest.DB, functions string) []string {
	t.Helper()
	ctx := context.Background()
	before := functionDefinitions(t, d.Pool)
	tx, err := d.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	files, err := filepath.Glob(filepath.Join(functions, "*.sql"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, strings.ReplaceAll(string(b), "@extschema@", "public"), pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatalf("apply %s: %v", f, err)
		}
	}
	var drift []string
	for name, def := range functionDefinitions(t, tx) {
		if before[name] != def {
			drift = append(drift, name+":\n"+lineDiff(before[name], def))
		}
	}
	return drift
}

// TestFunctionMigrationRestoresPrevious: scripts/function-migration.sh,
// given a canonical file whose body, grants and comment changed, or whose
// signature changed (in a temp copy of sql/), writes a migration whose Up installs exactly the canonical
// files and whose Down gives back the catalog of the migration before; and,
// given every canonical file unchanged, one whose Up and Down both leave the
// catalog as it is, which proves it reads every function's state (body,
// SECURITY DEFINER, search_path, grants, comment) right from the earlier
// migrations, whatever form they wrote it in.
func TestFunctionMigrationRestoresPrevious(t *testing.T) {
	t.Parallel()
	latest := latestVersion(t)
	next := latest + 1

	for _, tc := range []struct {
		name, file string
		edits      [][2]string // old, new
		generated  []string    // what the migration must say
		installed  []string    // what the catalog must show after its Up
	}{
		{
			name: "changed body, grants and comment", file: "sync_touch_partition.sql",
			edits: [][2]string{
				{"  PERFORM sync_assert_key('partition', $1);\n", "  PERFORM sync_assert_key('partition', $1); -- changed\n"},
				{"TO sync_writer;\n", "TO sync_writer, sync_admin;\n"},
				{"COMMENT ON FUNCTION sync_touch_partition(text,text,bigint) IS '", "COMMENT ON FUNCTION sync_touch_partition(text,text,bigint) IS 'Registers a partition; it''s a test. "},
			},
			generated: []string{"Down restores 00021_last_red_team_findings.sql's definition", "-- changed"},
			installed: []string{"-- changed", "sync_admin=EXECUTE,sync_writer=EXECUTE", "'Registers a partition; it''s a test. "},
		},
		{
			name: "changed signature", file: "sync_remove_checkpoint.sql",
			edits: [][2]string{
				{"sync_remove_checkpoint(partition text, name text)", "sync_remove_checkpoint(partition text, name text, reason text DEFAULT NULL)"},
				{"sync_remove_checkpoint(text,text) FROM", "sync_remove_checkpoint(text,text,text) FROM"},
				{"sync_remove_checkpoint(text,text) TO", "sync_remove_checkpoint(text,text,text) TO"},
				{"sync_remove_checkpoint(text,text) IS", "sync_remove_checkpoint(text,text,text) IS"},
			},
			generated: []string{"Down restores 00018_lifecycle_bounds.sql's definition", "DROP FUNCTION sync_remove_checkpoint(text, text);", "DROP FUNCTION sync_remove_checkpoint(text,text,text);"},
			installed: []string{"reason text DEFAULT NULL::text"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := copySQL(t)
			fn := filepath.Join(dir, "functions", tc.file)
			for _, e := range tc.edits {
				editFile(t, fn, e[0], e[1])
			}
			cmd := exec.Command("../scripts/function-migration.sh", "A changed function.", fn)
			cmd.Env = append(os.Environ(), "MIGRATIONS="+filepath.Join(dir, "migrations"))
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("function-migration.sh: %v\n%s", err, out)
			}
			for _, want := range tc.generated {
				if !strings.Contains(string(out), want) {
					t.Fatalf("generated migration lacks %q:\n%s", want, out)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, "migrations", fmt.Sprintf("%05d_changed.sql", next)), out, 0o644); err != nil {
				t.Fatal(err)
			}

			ctx := context.Background()
			d := pgtest.NewEmpty(t)
			p := tempMigrator(t, d, filepath.Join(dir, "migrations"))
			if _, err := p.UpTo(ctx, latest); err != nil {
				t.Fatal(err)
			}
			if drift := canonicalDrift(t, d, filepath.Join(dir, "functions")); len(drift) == 0 {
				t.Fatal("the edited canonical file differs from nothing at the latest migration: the drift check would pass anything")
			}
			before := dumpFullCatalog(t, d.Pool)
			if _, err := p.UpTo(ctx, next); err != nil {
				t.Fatalf("generated Up: %v\n%s", err, out)
			}
			after := dumpFullCatalog(t, d.Pool)
			changed := entryDiff(before, after)
			for _, want := range tc.installed {
				if !strings.Contains(changed, want) {
					t.Fatalf("Up did not install %q:\n%s", want, changed)
				}
			}
			if drift := canonicalDrift(t, d, filepath.Join(dir, "functions")); len(drift) > 0 {
				t.Fatalf("after the generated Up the database differs from the canonical files:\n%s", strings.Join(drift, "\n"))
			}
			if _, err := p.DownTo(ctx, latest); err != nil {
				t.Fatalf("generated Down: %v", err)
			}
			if got := dumpFullCatalog(t, d.Pool); !slices.Equal(got, before) {
				t.Fatalf("catalog after the generated Down differs from %05d's:\n%s", latest, entryDiff(before, got))
			}
		})
	}

	t.Run("every function unchanged", func(t *testing.T) {
		t.Parallel()
		files, err := filepath.Glob("../sql/functions/*.sql")
		if err != nil || len(files) < 30 {
			t.Fatalf("canonical files: %d, %v", len(files), err)
		}
		out, err := fnmigration.Generate("Every function again.", "../sql/migrations", files)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, ": new\n") {
			t.Fatalf("a function counted as new:\n%s", out)
		}
		dir := copySQL(t)
		if err := os.WriteFile(filepath.Join(dir, "migrations", fmt.Sprintf("%05d_again.sql", next)), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		d := pgtest.NewEmpty(t)
		p := tempMigrator(t, d, filepath.Join(dir, "migrations"))
		if _, err := p.UpTo(ctx, latest); err != nil {
			t.Fatal(err)
		}
		before := dumpFullCatalog(t, d.Pool)
		if _, err := p.UpTo(ctx, next); err != nil {
			t.Fatalf("generated Up: %v", err)
		}
		if got := dumpFullCatalog(t, d.Pool); !slices.Equal(got, before) {
			t.Fatalf("the Up of unchanged canonical files changed the catalog:\n%s", entryDiff(before, got))
		}
		if _, err := p.DownTo(ctx, latest); err != nil {
			t.Fatalf("generated Down: %v", err)
		}
		if got := dumpFullCatalog(t, d.Pool); !slices.Equal(got, before) {
			t.Fatalf("the generated Down does not restore what the migrations installed:\n%s", entryDiff(before, got))
		}
	})
}
