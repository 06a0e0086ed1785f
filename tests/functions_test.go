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
// the functions in sql/functions/, hardening and comment included:
// re-applying every canonical file inside a transaction, after every
// function's SECURITY DEFINER, SET clauses, grants and comment were
// scrambled, restores every function definition (body, SECURITY DEFINER,
// pinned search_path), every grant and every comment as migrated, and adds
// none; and every function of the schema has a canonical file.
func TestMigratedFunctionsAreCanonical(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	migrated := functionDefinitions(t, d.Pool)

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
	// Scramble what CREATE OR REPLACE keeps (grants, the comment) and what
	// it resets (SECURITY DEFINER, SET), so only the canonical files can
	// restore them.
	if _, err := tx.Exec(ctx, `DO $$
		DECLARE f regprocedure;
		BEGIN
		  FOR f IN SELECT p.oid::regprocedure FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace LOOP
		    EXECUTE format('ALTER FUNCTION %s SECURITY INVOKER', f);
		    EXECUTE format('ALTER FUNCTION %s RESET ALL', f);
		    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO PUBLIC, sync_reader, sync_writer, sync_backfill, sync_admin', f);
		    EXECUTE format('COMMENT ON FUNCTION %s IS %L', f, 'scrambled');
		  END LOOP;
		END $$`); err != nil {
		t.Fatal(err)
	}
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
		// Triggers name their tables by schema and every function pins
		// its path with the schema, written in at migration time.
		sql := strings.ReplaceAll(string(body), "@extschema@", schema)
		if _, err := tx.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatalf("apply %s: %v", f, err)
		}
	}
	reapplied := functionDefinitions(t, tx)
	for name, def := range migrated {
		if reapplied[name] != def {
			t.Errorf("function %s as migrated differs from sql/functions:\n%s", name, lineDiff(def, reapplied[name]))
		}
	}
	for name := range reapplied {
		if _, ok := migrated[name]; !ok {
			t.Errorf("sql/functions adds %s, which the migrations do not create", name)
		}
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

// functionDefinitions is every function of the schema as the canonical files
// state it, by signature: its definition, then one line per grant to a role
// other than its owner, then its comment.
func functionDefinitions(t *testing.T, q rowsQuerier) map[string]string {
	t.Helper()
	rows, err := q.Query(context.Background(), `
	SELECT p.oid::regprocedure::text, pg_get_functiondef(p.oid) || coalesce((
	         SELECT string_agg(E'\nEXECUTE TO ' || CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END, ''
	                           ORDER BY CASE WHEN a.grantee = 0 THEN '' ELSE pg_get_userbyid(a.grantee) END)
	           FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
	          WHERE a.grantee <> p.proowner AND a.privilege_type = 'EXECUTE'), '')
	       || coalesce(E'\nCOMMENT ' || obj_description(p.oid, 'pg_proc'), E'\nno comment')
	  FROM pg_proc p
	 WHERE p.pronamespace = current_schema()::regnamespace`)
	if err != nil {
		t.Fatal(err)
	}
	defs := map[string]string{}
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			t.Fatal(err)
		}
		defs[name] = def
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return defs
}
