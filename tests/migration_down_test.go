package tests

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// fullCatalogQueries dump everything a migration can change in the schema,
// one line per object, so that two catalogs compare equal exactly when they
// are the same schema. Grants are normalised: aclexplode, the owner's own
// entries dropped, sorted, and a NULL acl read as its default, so REVOKE
// then GRANT of the same privileges compares equal to never touching them.
var fullCatalogQueries = []struct{ name, sql string }{
	{"tables", catalogQueries["tables"]},
	{"constraints", catalogQueries["constraints"]},
	{"indexes", catalogQueries["indexes"]},
	{"triggers", catalogQueries["triggers"]},
	{"relations", `
		SELECT format('%s %s owner-acl:%s rls:%s/%s comment:%s', c.relname, c.relkind,
		         (SELECT coalesce(string_agg(CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END
		                                     || '=' || a.privilege_type || CASE WHEN a.is_grantable THEN '*' ELSE '' END, ',' ORDER BY CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END
		                                     || '=' || a.privilege_type || CASE WHEN a.is_grantable THEN '*' ELSE '' END), '')
		            FROM aclexplode(coalesce(c.relacl, acldefault(CASE c.relkind WHEN 'S' THEN 's' ELSE 'r' END::"char", c.relowner))) a
		           WHERE a.grantee <> c.relowner),
		         c.relrowsecurity, c.relforcerowsecurity, coalesce(quote_literal(obj_description(c.oid, 'pg_class')), 'none'))
		  FROM pg_class c
		 WHERE c.relnamespace = current_schema()::regnamespace AND c.relname LIKE 'sync\_%'
		   AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
		 ORDER BY 1`},
	{"column grants and comments", `
		SELECT format('%s.%s acl:%s comment:%s', c.relname, t.attname,
		         (SELECT coalesce(string_agg(CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END
		                                     || '=' || a.privilege_type, ',' ORDER BY CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END
		                                     || '=' || a.privilege_type), '')
		            FROM aclexplode(t.attacl) a WHERE a.grantee <> c.relowner),
		         coalesce(quote_literal(col_description(c.oid, t.attnum)), 'none'))
		  FROM pg_class c JOIN pg_attribute t ON t.attrelid = c.oid AND t.attnum > 0 AND NOT t.attisdropped
		 WHERE c.relnamespace = current_schema()::regnamespace AND c.relname LIKE 'sync\_%'
		   AND (t.attacl IS NOT NULL OR col_description(c.oid, t.attnum) IS NOT NULL)
		 ORDER BY 1`},
	{"views", `
		SELECT c.relname || ' ' || pg_get_viewdef(c.oid)
		  FROM pg_class c
		 WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('v', 'm')
		 ORDER BY 1`},
	{"sequences", `
		SELECT format('%s %s start %s inc %s min %s max %s cycle %s owned-by %s', c.relname, format_type(s.seqtypid, NULL),
		         s.seqstart, s.seqincrement, s.seqmin, s.seqmax, s.seqcycle,
		         coalesce((SELECT d.refobjid::regclass || '.' || a.attname FROM pg_depend d
		                     JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
		                    WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i')), 'none'))
		  FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid
		 WHERE c.relnamespace = current_schema()::regnamespace AND c.relname LIKE 'sync\_%'
		 ORDER BY 1`},
	{"policies", `
		SELECT format('%s %s %s %s %s %s', c.relname, p.polname, p.polcmd, p.polpermissive, p.polroles::regrole[]::text,
		         concat_ws(' / ', pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid)))
		  FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid
		 WHERE c.relnamespace = current_schema()::regnamespace
		 ORDER BY 1`},
	{"functions", `
		SELECT pg_get_functiondef(p.oid)
		       || E'\n-- grants: ' || (SELECT coalesce(string_agg(CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END
		                                                    || '=' || a.privilege_type || CASE WHEN a.is_grantable THEN '*' ELSE '' END, ',' ORDER BY CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END
		                                                    || '=' || a.privilege_type || CASE WHEN a.is_grantable THEN '*' ELSE '' END), '')
		                                 FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
		                                WHERE a.grantee <> p.proowner)
		       || E'\n-- comment: ' || coalesce(quote_literal(obj_description(p.oid, 'pg_proc')), 'none')
		  FROM pg_proc p
		 WHERE p.pronamespace = current_schema()::regnamespace
		   AND NOT EXISTS (SELECT 1 FROM pg_depend d
		                    WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
		 ORDER BY p.proname, pg_get_function_identity_arguments(p.oid)`},
	{"schema", `
		SELECT format('%s acl:%s comment:%s', n.nspname,
		         (SELECT coalesce(string_agg(CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END
		                                     || '=' || a.privilege_type, ',' ORDER BY CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END
		                                     || '=' || a.privilege_type), '')
		            FROM aclexplode(coalesce(n.nspacl, acldefault('n', n.nspowner))) a WHERE a.grantee <> n.nspowner),
		         coalesce(quote_literal(obj_description(n.oid, 'pg_namespace')), 'none'))
		  FROM pg_namespace n WHERE n.oid = current_schema()::regnamespace`},
}

// dumpFullCatalog is the whole schema as fullCatalogQueries read it: one
// entry per object (a function's entry spans lines), in a stable order.
func dumpFullCatalog(t *testing.T, q rowsQuerier) []string {
	t.Helper()
	var entries []string
	for _, part := range fullCatalogQueries {
		rows, err := q.Query(context.Background(), part.sql)
		if err != nil {
			t.Fatalf("%s: %v", part.name, err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			entries = append(entries, part.name+": "+l)
		}
	}
	return entries
}

// entryDiff lists the entries only in want (-) and only in got (+), whole.
func entryDiff(want, got []string) string {
	var b strings.Builder
	for _, w := range want {
		if !slices.Contains(got, w) {
			b.WriteString("- " + w + "\n")
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			b.WriteString("+ " + g + "\n")
		}
	}
	return b.String()
}

// downExceptions are the landed (immutable) migrations whose Down does not
// restore the previous catalog exactly, each with the exact difference
// (entryDiff of the catalog before the Up, want, and after the Down, got)
// and why it is accepted. The test fails if a listed difference changes or
// goes away, so the list stays true.
var downExceptions = map[int64]struct{ diff, why string }{}

// checkOnly are the migrations that install nothing (so their Up may leave
// the catalog as it was).
var checkOnly = map[int64]string{
	17: "00017 refuses objects under gosync names owned by another role; it creates nothing",
}

// TestEveryMigrationDownRestores: for every migration N, the catalog after
// N's Up and Down is exactly the catalog of N-1 (tables, constraints,
// indexes, triggers, relations with their grants, row security and comments,
// column grants, views, sequences, policies, functions with their
// definitions, grants and comments, the schema's grants), but for the
// documented downExceptions; and Up again gives N's catalog. One database
// walks up the whole chain. Roles are cluster-wide and out of scope: 00006's
// Down keeps sync_reader..sync_admin and their memberships on purpose
// (other databases may use them).
func TestEveryMigrationDownRestores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, p := emptyMigrator(t)
	before := dumpFullCatalog(t, d.Pool)
	seen := map[int64]bool{}
	for _, src := range p.ListSources() {
		v := src.Version
		if _, err := p.UpTo(ctx, v); err != nil {
			t.Fatalf("up to %05d: %v", v, err)
		}
		after := dumpFullCatalog(t, d.Pool)
		if _, ok := checkOnly[v]; slices.Equal(after, before) && !ok {
			t.Errorf("%05d changed nothing in the catalog", v)
		}
		if _, err := p.DownTo(ctx, v-1); err != nil {
			t.Fatalf("%05d down: %v", v, err)
		}
		if got := dumpFullCatalog(t, d.Pool); !slices.Equal(got, before) {
			diff := entryDiff(before, got)
			if ex, ok := downExceptions[v]; ok && ex.diff == diff {
				seen[v] = true
			} else {
				t.Errorf("catalog after %05d's Down differs from %05d's:\n%s", v, v-1, diff)
			}
		}
		if _, err := p.UpTo(ctx, v); err != nil {
			t.Fatalf("%05d up again: %v", v, err)
		}
		if again := dumpFullCatalog(t, d.Pool); !slices.Equal(again, after) {
			t.Errorf("catalog after %05d down/up differs from its first up:\n%s", v, entryDiff(after, again))
		}
		before = after
	}
	for v := range downExceptions {
		if !seen[v] {
			t.Errorf("downExceptions[%05d] no longer occurs as written: update or remove it", v)
		}
	}
	if len(p.ListSources()) < 21 {
		t.Fatalf("only %d migrations", len(p.ListSources()))
	}
}
