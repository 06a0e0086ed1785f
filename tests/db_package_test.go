package tests

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gosync/gosync/internal/pgtest"
)

// outsideProgram is a Go service outside the repository: it imports the
// public db package, calls a query on the database the test hands it, and
// maps a refusal with gosync.MapError.
const outsideProgram = `package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gosync/gosync/db"
	"github.com/gosync/gosync/gosync"
)

func main() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("GOSYNC_OUTSIDE_DB"))
	if err != nil {
		fail(err)
	}
	defer pool.Close()
	q := db.New()
	cp, err := q.DeclareCheckpoint(ctx, pool, db.DeclareCheckpointParams{Partition: "p1", Name: "outside", SchemaVersion: 2})
	if err != nil {
		fail(err)
	}
	fmt.Printf("declared %s/%s v%d %s\n", cp.Partition, cp.Name, cp.SchemaVersion, cp.State)
	// A nil pointer is NULL: every partition's checkpoints.
	all, err := q.Checkpoints(ctx, pool, nil)
	if err != nil {
		fail(err)
	}
	fmt.Printf("checkpoints %d\n", len(all))
	// At most one row: pgx.ErrNoRows when there is none.
	if _, err := q.Checkpoint(ctx, pool, db.CheckpointParams{Partition: "p1", Name: "absent"}); !errors.Is(err, pgx.ErrNoRows) {
		fail(fmt.Errorf("Checkpoint of an absent row: %v", err))
	}
	// A refusal comes back raw; MapError makes it a typed error.
	_, err = q.ClaimCheckpoint(ctx, pool, db.ClaimCheckpointParams{Partition: "p1", Name: "outside", SchemaVersion: -1})
	if err == nil || errors.Is(err, gosync.ErrInvalidArgument) {
		fail(fmt.Errorf("raw error %v: want an unmapped refusal", err))
	}
	if !errors.Is(gosync.MapError(err), gosync.ErrInvalidArgument) {
		fail(fmt.Errorf("mapped %v: want gosync.ErrInvalidArgument", gosync.MapError(err)))
	}
	fmt.Println("mapped ErrInvalidArgument")
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
`

// TestDBPackageFromOutside builds a module outside the repository that
// imports github.com/gosync/gosync/db (an internal package would not
// compile there), runs a query against a real database and maps an error.
func TestDBPackageFromOutside(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	pgx := goListModule(t, repo, "github.com/jackc/pgx/v5")
	dir := t.TempDir()
	gomod := "module example.com/outside\n\ngo 1.26.0\n\n" +
		"require (\n\tgithub.com/gosync/gosync v0.0.0\n\t" + pgx + "\n)\n\n" +
		"replace github.com/gosync/gosync => " + repo + "\n"
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum, "main.go": []byte(outsideProgram)} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "run", ".")
	cmd.Dir = dir
	// Offline: every dependency is in the module cache already.
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOSUMDB=off", "GOWORK=off",
		"GOSYNC_OUTSIDE_DB="+d.URL)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go run (outside module): %v\n%s%s", err, stdout.String(), stderr.String())
	}
	want := "declared p1/outside v2 declared\ncheckpoints 1\nmapped ErrInvalidArgument\n"
	if stdout.String() != want {
		t.Fatalf("outside program printed\n%s\nwant\n%s", stdout.String(), want)
	}
	if n := queryOne[int64](t, d.Pool, "SELECT count(*) FROM sync_backfill_checkpoints WHERE name = 'outside'"); n != 1 {
		t.Fatalf("the outside program's declare left %d rows", n)
	}
}

// TestGosyncAPIHasNoDBTypes: package gosync is the typed API on top of db;
// no generated type appears in what it exports.
func TestGosyncAPIHasNoDBTypes(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "doc", "-all", "github.com/gosync/gosync/gosync").CombinedOutput()
	if err != nil {
		t.Fatalf("go doc: %v\n%s", err, out)
	}
	if m := regexp.MustCompile(`(?m)^.*\b(db|demodb)\.[A-Z]\w*.*$`).FindAllString(string(out), -1); len(m) > 0 {
		t.Fatalf("gosync's exported API names generated types:\n%s", strings.Join(m, "\n"))
	}
	if !strings.Contains(string(out), "func MapError(err error) error") {
		t.Fatalf("go doc output lacks MapError (the check would pass vacuously):\n%.500s", out)
	}
}

// goListModule returns "path version" of a module the repository requires.
func goListModule(t *testing.T, repo, path string) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", path)
	cmd.Dir = repo
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", path, err)
	}
	return strings.TrimSpace(string(out))
}
