package tests

import (
	"bytes"
	"context"
	"flag"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gosync/gosync/internal/pgtest"
	"github.com/gosync/gosync/internal/sqlref"
	sqlfiles "github.com/gosync/gosync/sql"
)

var updateDocs = flag.Bool("update", false, "rewrite docs/sql.md from the catalog (make docs)")

const referencePath = "../docs/sql.md"

// loadReference reads a fresh migrated database's catalog and the SQL files.
func loadReference(t *testing.T, d *pgtest.DB) (*sqlref.Catalog, map[string]sqlref.Source, map[string]sqlref.History) {
	t.Helper()
	cat, err := sqlref.Load(context.Background(), d.Pool)
	if err != nil {
		t.Fatal(err)
	}
	sources, err := sqlref.ReadSources(sqlfiles.Functions())
	if err != nil {
		t.Fatal(err)
	}
	history, err := sqlref.ReadHistory(sqlfiles.Migrations())
	if err != nil {
		t.Fatal(err)
	}
	return cat, sources, history
}

// TestSQLReferenceIsCurrent: docs/sql.md is what the generator makes of the
// migrated catalog and the SQL files (`make docs` rewrites it).
func TestSQLReferenceIsCurrent(t *testing.T) {
	t.Parallel()
	cat, sources, history := loadReference(t, pgtest.New(t))
	got, err := sqlref.Render(cat, sources, history)
	if err != nil {
		t.Fatal(err)
	}
	if *updateDocs {
		if err := os.WriteFile(referencePath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatalf("%v (run make docs)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("docs/sql.md is stale: run make docs\n%s", lineDiff(string(want), string(got)))
	}
}

// TestEveryObjectIsDocumented: every function, sync_* table, view and
// sequence and every trigger of the migrated schema has a comment and an
// entry in docs/sql.md; helpers are marked internal (every trigger function
// and every argument check), and the API has an example.
func TestEveryObjectIsDocumented(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	cat, sources, _ := loadReference(t, d)
	doc, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	heading := func(name string) bool { return bytes.Contains(doc, []byte("\n### "+name+"\n")) }
	if len(cat.Functions) < 40 || len(cat.Relations) < 19 || len(cat.Triggers) < 6 {
		t.Fatalf("catalog too small (%d functions, %d relations, %d triggers): the query lost objects",
			len(cat.Functions), len(cat.Relations), len(cat.Triggers))
	}
	for _, f := range cat.Functions {
		if strings.TrimSpace(f.Comment) == "" {
			t.Errorf("function %s(%s) has no comment", f.Name, f.Identity)
		}
		if !heading(f.Name) {
			t.Errorf("function %s has no entry in docs/sql.md", f.Name)
		}
		mustBeInternal := f.Result == "trigger" || strings.HasPrefix(f.Name, "sync_assert_")
		if mustBeInternal && !sqlref.IsInternal(f.Comment) {
			t.Errorf("helper %s: its comment must start with %q", f.Name, sqlref.Internal)
		}
		if !sqlref.IsInternal(f.Comment) && len(sources[f.Name].Example) == 0 {
			t.Errorf("API function %s has no -- Example: block in sql/functions/%s.sql", f.Name, f.Name)
		}
	}
	for _, r := range cat.Relations {
		if strings.TrimSpace(r.Comment) == "" {
			t.Errorf("%s %s has no comment", r.Kind, r.Name)
		}
		if !heading(r.Name) {
			t.Errorf("%s %s has no entry in docs/sql.md", r.Kind, r.Name)
		}
	}
	for _, tg := range cat.Triggers {
		if strings.TrimSpace(tg.Comment) == "" {
			t.Errorf("trigger %s on %s has no comment", tg.Name, tg.Table)
		}
		if !bytes.Contains(doc, []byte("| `"+tg.Name+"` | `"+tg.Table+"` |")) {
			t.Errorf("trigger %s has no entry in docs/sql.md", tg.Name)
		}
	}
	for _, r := range cat.Roles {
		if !bytes.Contains(doc, []byte("| `"+r+"` |")) {
			t.Errorf("role %s has no entry in docs/sql.md", r)
		}
	}
}

// TestRelationCommentsAreCanonical: the migrated comments of every sync_*
// relation and trigger are exactly sql/comments.sql's: after scrambling
// them all, applying the file restores every one.
func TestRelationCommentsAreCanonical(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	migrated := relationComments(t, d.Pool)
	tx, err := d.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	mustExec(t, tx, `DO $$
		DECLARE r record;
		BEGIN
		  FOR r IN SELECT c.oid::regclass AS rel, CASE c.relkind WHEN 'v' THEN 'VIEW' WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END AS kind
		             FROM pg_class c
		            WHERE c.relnamespace = current_schema()::regnamespace AND c.relname LIKE 'sync\_%'
		              AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f') LOOP
		    EXECUTE format('COMMENT ON %s %s IS %L', r.kind, r.rel, 'scrambled');
		  END LOOP;
		  FOR r IN SELECT t.tgname, t.tgrelid::regclass AS rel FROM pg_trigger t
		            WHERE NOT t.tgisinternal AND t.tgrelid::regclass::text LIKE 'sync\_%' LOOP
		    EXECUTE format('COMMENT ON TRIGGER %I ON %s IS %L', r.tgname, r.rel, 'scrambled');
		  END LOOP;
		END $$`)
	if _, err := tx.Exec(ctx, sqlfiles.Comments(), pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatalf("apply sql/comments.sql: %v", err)
	}
	if got := relationComments(t, tx); got != migrated {
		t.Errorf("migrated comments differ from sql/comments.sql:\n%s", lineDiff(migrated, got))
	}
}

func relationComments(t *testing.T, q rowsQuerier) string {
	t.Helper()
	return queryLines(t, q, `
	SELECT 'relation ' || c.relname || ': ' || coalesce(obj_description(c.oid, 'pg_class'), 'no comment')
	  FROM pg_class c
	 WHERE c.relnamespace = current_schema()::regnamespace AND c.relname LIKE 'sync\_%'
	   AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
	UNION ALL
	SELECT 'trigger ' || t.tgname || ' on ' || t.tgrelid::regclass || ': ' || coalesce(obj_description(t.oid, 'pg_trigger'), 'no comment')
	  FROM pg_trigger t WHERE NOT t.tgisinternal AND t.tgrelid::regclass::text LIKE 'sync\_%'
	ORDER BY 1`)
}

// TestPsqlDescribesEveryObject: psql's own listings (\df+, \dt+, \dv+,
// \ds+, \dd) show every comment, the internal marks included.
func TestPsqlDescribesEveryObject(t *testing.T) {
	t.Parallel()
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Fatalf("psql not found: %v (make deps installs it)", err)
	}
	d := pgtest.New(t)
	cat, _, _ := loadReference(t, d)
	out, err := exec.Command(psql, "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", d.URL,
		"-c", `\df+ sync*`, "-c", `\dt+ sync_*`, "-c", `\dv+ sync_*`, "-c", `\ds+ sync_*`, "-c", `\dd sync*`).CombinedOutput()
	if err != nil {
		t.Fatalf("psql: %v\n%s", err, out)
	}
	// psql -A separates columns with |; a description is the last column.
	described := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		if i := strings.LastIndex(l, "|"); i >= 0 {
			described[l[i+1:]] = true
		}
	}
	check := func(what, comment string) {
		if !described[comment] {
			t.Errorf("psql does not describe %s as %q", what, comment)
		}
	}
	for _, f := range cat.Functions {
		check("function "+f.Name, f.Comment)
	}
	for _, r := range cat.Relations {
		check(r.Kind+" "+r.Name, r.Comment)
	}
	for _, tg := range cat.Triggers {
		check("trigger "+tg.Name, tg.Comment)
	}
}

var txControl = regexp.MustCompile(`(?m)^(BEGIN|COMMIT)\b[^;]*;[^\n]*$`)

// TestSQLReferenceExamplesRun: every example of docs/sql.md (the
// -- Example: blocks of sql/functions/) runs without error on a fresh
// database, inside a transaction that is then rolled back (its own BEGIN and
// COMMIT lines are dropped), as the superuser.
func TestSQLReferenceExamplesRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	_, sources, _ := loadReference(t, d)
	n := 0
	for name, src := range sources {
		if len(src.Example) == 0 {
			continue
		}
		n++
		sql := txControl.ReplaceAllString(strings.Join(src.Example, "\n"), "")
		tx, err := d.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Errorf("example of %s: %v\n%s", name, err, sql)
		}
		_ = tx.Rollback(ctx)
	}
	if n < 26 {
		t.Errorf("%d examples; every API function has one", n)
	}
}

// TestSQLReferenceMigrationDown: 00022 comments every object and its Down
// removes every comment it wrote, leaving the catalog as 00021 left it and
// the audit clean both ways.
func TestSQLReferenceMigrationDown(t *testing.T) {
	t.Parallel()
	const version = 22 // 00022_sql_reference.sql
	ctx := context.Background()
	d, p := emptyMigrator(t)
	if _, err := p.UpTo(ctx, version-1); err != nil {
		t.Fatal(err)
	}
	beforeCatalog, beforeComments := dumpWholeCatalog(t, d.Pool), everyComment(t, d.Pool)
	if strings.Contains(beforeComments, "IS '") {
		t.Fatalf("comments before %d:\n%s", version, beforeComments)
	}
	if _, err := p.UpTo(ctx, version); err != nil {
		t.Fatal(err)
	}
	assertAuditClean(t, d.Pool)
	if up := everyComment(t, d.Pool); strings.Contains(up, "IS NULL") {
		t.Fatalf("objects without a comment after %d:\n%s", version, up)
	}
	if _, err := p.DownTo(ctx, version-1); err != nil {
		t.Fatal(err)
	}
	assertAuditClean(t, d.Pool)
	if after := everyComment(t, d.Pool); after != beforeComments {
		t.Fatalf("comments after %d up/down differ:\n%s", version, lineDiff(beforeComments, after))
	}
	if after := dumpWholeCatalog(t, d.Pool); after != beforeCatalog {
		t.Fatalf("catalog after %d up/down differs:\n%s", version, lineDiff(beforeCatalog, after))
	}
}

// everyComment is one line per function, sync_* relation and trigger of
// the schema: "<object> IS '<comment>'" or "<object> IS NULL".
func everyComment(t *testing.T, q rowsQuerier) string {
	t.Helper()
	return queryLines(t, q, `
	SELECT o || coalesce(' IS ' || quote_literal(c), ' IS NULL') FROM (
	  SELECT 'function ' || p.oid::regprocedure, obj_description(p.oid, 'pg_proc')
	    FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace
	  UNION ALL
	  SELECT 'relation ' || c.relname, obj_description(c.oid, 'pg_class')
	    FROM pg_class c
	   WHERE c.relnamespace = current_schema()::regnamespace AND c.relname LIKE 'sync\_%'
	     AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
	  UNION ALL
	  SELECT 'trigger ' || t.tgname || ' on ' || t.tgrelid::regclass, obj_description(t.oid, 'pg_trigger')
	    FROM pg_trigger t WHERE NOT t.tgisinternal AND t.tgrelid::regclass::text LIKE 'sync\_%'
	) x(o, c) ORDER BY 1`)
}
