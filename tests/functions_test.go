package tests

import (
	"context"
	"io/fs"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gosync/gosync/internal/pgtest"
	sqlfiles "github.com/gosync/gosync/sql"
)

var createFunction = regexp.MustCompile(`(?m)^CREATE OR REPLACE FUNCTION ([a-z_]+)\(`)

// TestMigratedFunctionsAreCanonical proves the migrated database runs exactly
// the bodies in sql/functions/: re-applying every canonical file inside a
// transaction changes no function definition and adds none, and every
// function of the schema has a canonical file.
func TestMigratedFunctionsAreCanonical(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	migrated := dumpCatalog(t, d.Pool, "functions")

	files, err := fs.Glob(sqlfiles.Functions(), "*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no canonical functions: %v", err)
	}
	canonical := map[string]bool{}
	tx, err := d.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var schema string // as the migration writes it in: quote_ident(current_schema())
	if err := tx.QueryRow(ctx, "SELECT quote_ident(current_schema())").Scan(&schema); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		body, err := fs.ReadFile(sqlfiles.Functions(), f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range createFunction.FindAllStringSubmatch(string(body), -1) {
			canonical[m[1]] = true
		}
		// The fence trigger names its tables by schema, written in at
		// migration time (see syncular_writer_fence.sql).
		sql := strings.ReplaceAll(string(body), "@extschema@", schema)
		if _, err := tx.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatalf("apply %s: %v", f, err)
		}
	}
	rows, err := tx.Query(ctx, catalogQueries["functions"])
	if err != nil {
		t.Fatal(err)
	}
	defs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	// The bodies must match; the privileges and the pinned search_path
	// come from the roles migration's ALTERs (tested in roles_test.go).
	if reapplied := strings.Join(defs, "\n"); withoutSecurity(reapplied) != withoutSecurity(migrated) {
		t.Fatalf("migrated functions differ from sql/functions:\n%s", lineDiff(migrated, reapplied))
	}

	var inDB []string
	if err := tx.QueryRow(ctx, `SELECT coalesce(array_agg(DISTINCT proname::text), '{}') FROM pg_proc
		WHERE pronamespace = current_schema()::regnamespace`).Scan(&inDB); err != nil {
		t.Fatal(err)
	}
	sort.Strings(inDB)
	for _, name := range inDB {
		if !canonical[name] {
			t.Errorf("function %s has no canonical body in sql/functions/", name)
		}
	}
}

// withoutSecurity drops the SECURITY DEFINER and SET search_path clauses
// from pg_get_functiondef output.
func withoutSecurity(defs string) string {
	var out []string
	for _, line := range strings.Split(defs, "\n") {
		if strings.HasPrefix(line, " SET search_path") {
			continue
		}
		if line = strings.Replace(line, " SECURITY DEFINER", "", 1); line != "" {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
