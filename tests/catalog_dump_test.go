package tests

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// catalogQueries dump what the compatibility promise covers, one line per
// object, in a stable order. Only relations named sync_% and functions in the
// current schema are read, so goose's version table is left out.
var catalogQueries = map[string]string{
	"tables": `
		SELECT format('%s.%s %s%s%s', c.relname, a.attname, format_type(a.atttypid, a.atttypmod),
		              CASE WHEN a.attnotnull THEN ' not null' ELSE '' END,
		              coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), ''))
		  FROM pg_class c
		  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
		  LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
		 WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'
		   AND c.relname LIKE 'sync\_%'
		 ORDER BY c.relname, a.attnum`,
	"constraints": `
		SELECT format('%s %s %s', c.relname, k.conname, pg_get_constraintdef(k.oid))
		  FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
		 WHERE c.relnamespace = current_schema()::regnamespace AND c.relname LIKE 'sync\_%'
		 ORDER BY 1`,
	"indexes": `
		SELECT format('%s %s', tablename, replace(indexdef, 'ON ' || schemaname || '.', 'ON '))
		  FROM pg_indexes
		 WHERE schemaname = current_schema() AND tablename LIKE 'sync\_%'
		 ORDER BY 1`,
	"triggers": `
		SELECT format('%s %s %s', c.relname, CASE t.tgenabled WHEN 'O' THEN 'enabled' ELSE 'not-enabled' END,
		              replace(pg_get_triggerdef(t.oid), 'ON ' || current_schema() || '.', 'ON '))
		  FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
		 WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace
		 ORDER BY 1`,
	"functions": `
		SELECT pg_get_functiondef(p.oid)
		  FROM pg_proc p
		 WHERE p.pronamespace = current_schema()::regnamespace
		   AND NOT EXISTS (SELECT 1 FROM pg_depend d
		                    WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
		 ORDER BY p.proname, pg_get_function_identity_arguments(p.oid)`,
}

// dumpCatalog returns the named part of the catalog dump as text.
func dumpCatalog(t *testing.T, pool *pgxpool.Pool, part string) string {
	t.Helper()
	rows, err := pool.Query(context.Background(), catalogQueries[part])
	if err != nil {
		t.Fatalf("catalog %s: %v", part, err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("catalog %s: %v", part, err)
	}
	return strings.Join(lines, "\n")
}

// dumpWholeCatalog is every part, for before/after comparisons.
func dumpWholeCatalog(t *testing.T, pool *pgxpool.Pool) string {
	var b strings.Builder
	for _, part := range []string{"tables", "constraints", "indexes", "triggers", "functions"} {
		b.WriteString("## " + part + "\n" + dumpCatalog(t, pool, part) + "\n")
	}
	return b.String()
}
