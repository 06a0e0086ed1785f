// Package sqlref generates docs/sql.md, gosync's SQL reference, from a
// migrated database's catalog (signatures, grants, comments, columns), the
// canonical function files (headers, RAISE statements, examples) and the
// migrations (which one introduced an object and which last replaced it).
// tests/sql_reference_test.go runs it against a fresh database and fails
// when docs/sql.md is stale; `make docs` rewrites the file.
package sqlref

import (
	"context"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"
)

// Querier is what Load reads the catalog with (a pool, a connection, a
// transaction).
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Catalog is what the reference reads from the database: every function,
// sync_* relation and trigger of the schema that holds sync_commits, and
// the sync_* roles.
type Catalog struct {
	Functions []Function
	Relations []Relation
	Triggers  []Trigger
	Roles     []string
}

// Function is one function as pg_proc states it.
type Function struct {
	Name            string
	Identity        string // pg_get_function_identity_arguments
	Arguments       string // pg_get_function_arguments (with defaults)
	Result          string // pg_get_function_result
	Args            []Arg
	Comment         string
	Language        string
	Volatility      string // immutable, stable, volatile
	SecurityDefiner bool
	Grants          []string // roles with EXECUTE other than the owner, PUBLIC included
}

// Arg is one argument; Mode is in, out, inout, variadic or table.
type Arg struct {
	Name, Type, Mode, Default string
}

// Relation is one sync_* table, view or sequence.
type Relation struct {
	Name    string
	Kind    string // table, view, sequence
	Comment string
	Columns []Column
	Grants  []string // "role PRIVILEGE", sorted
}

// Column is one column of a table or view.
type Column struct {
	Name, Type, Default string
	NotNull             bool
}

// Trigger is one trigger on a sync_* table.
type Trigger struct {
	Name, Table, Definition, Function, Comment string
}

// Load reads the catalog of the schema that holds sync_commits.
func Load(ctx context.Context, q Querier) (*Catalog, error) {
	cat := &Catalog{}
	byOID := map[uint32]*Function{}
	var order []uint32
	err := each(ctx, q, `
	SELECT p.oid, p.proname, pg_get_function_identity_arguments(p.oid), pg_get_function_arguments(p.oid),
	       pg_get_function_result(p.oid), coalesce(obj_description(p.oid, 'pg_proc'), ''), l.lanname,
	       CASE p.provolatile WHEN 'i' THEN 'immutable' WHEN 's' THEN 'stable' ELSE 'volatile' END, p.prosecdef,
	       ARRAY(SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END
	               FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
	              WHERE a.grantee <> p.proowner AND a.privilege_type = 'EXECUTE' ORDER BY 1)
	  FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
	 WHERE p.pronamespace = (SELECT relnamespace FROM pg_class WHERE oid = 'sync_commits'::regclass)
	 ORDER BY p.proname, 3`, func(r pgx.Rows) error {
		var oid uint32
		f := &Function{}
		if err := r.Scan(&oid, &f.Name, &f.Identity, &f.Arguments, &f.Result, &f.Comment, &f.Language,
			&f.Volatility, &f.SecurityDefiner, &f.Grants); err != nil {
			return err
		}
		byOID[oid] = f
		order = append(order, oid)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = each(ctx, q, `
	SELECT p.oid, coalesce(p.proargnames[a.ord], ''), format_type(a.typ, NULL),
	       CASE coalesce(p.proargmodes[a.ord], 'i') WHEN 'i' THEN 'in' WHEN 'o' THEN 'out' WHEN 'b' THEN 'inout'
	                                                 WHEN 'v' THEN 'variadic' ELSE 'table' END,
	       coalesce(pg_get_function_arg_default(p.oid, a.ord::int), '')
	  FROM pg_proc p, unnest(coalesce(p.proallargtypes, p.proargtypes::oid[])) WITH ORDINALITY a(typ, ord)
	 WHERE p.pronamespace = (SELECT relnamespace FROM pg_class WHERE oid = 'sync_commits'::regclass)
	 ORDER BY p.oid, a.ord`, func(r pgx.Rows) error {
		var oid uint32
		var a Arg
		if err := r.Scan(&oid, &a.Name, &a.Type, &a.Mode, &a.Default); err != nil {
			return err
		}
		if f, ok := byOID[oid]; ok {
			f.Args = append(f.Args, a)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, oid := range order {
		cat.Functions = append(cat.Functions, *byOID[oid])
	}

	byName := map[string]*Relation{}
	var names []string
	err = each(ctx, q, `
	SELECT c.relname, CASE c.relkind WHEN 'v' THEN 'view' WHEN 'S' THEN 'sequence' ELSE 'table' END,
	       coalesce(obj_description(c.oid, 'pg_class'), ''),
	       ARRAY(SELECT CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee) END || ' ' || a.privilege_type
	               FROM aclexplode(coalesce(c.relacl, acldefault(CASE c.relkind WHEN 'S' THEN 's' ELSE 'r' END::"char", c.relowner))) a
	              WHERE a.grantee <> c.relowner ORDER BY 1)
	  FROM pg_class c
	 WHERE c.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = 'sync_commits'::regclass)
	   AND c.relname LIKE 'sync\_%' AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
	 ORDER BY c.relname`, func(r pgx.Rows) error {
		rel := &Relation{}
		if err := r.Scan(&rel.Name, &rel.Kind, &rel.Comment, &rel.Grants); err != nil {
			return err
		}
		byName[rel.Name] = rel
		names = append(names, rel.Name)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = each(ctx, q, `
	SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
	       coalesce(pg_get_expr(d.adbin, d.adrelid), '')
	  FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
	  LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
	 WHERE c.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = 'sync_commits'::regclass)
	   AND c.relname LIKE 'sync\_%' AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
	 ORDER BY c.relname, a.attnum`, func(r pgx.Rows) error {
		var rel string
		var col Column
		if err := r.Scan(&rel, &col.Name, &col.Type, &col.NotNull, &col.Default); err != nil {
			return err
		}
		if x, ok := byName[rel]; ok {
			x.Columns = append(x.Columns, col)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		cat.Relations = append(cat.Relations, *byName[n])
	}

	err = each(ctx, q, `
	SELECT t.tgname, c.relname, pg_get_triggerdef(t.oid), p.proname, coalesce(obj_description(t.oid, 'pg_trigger'), '')
	  FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid
	 WHERE NOT t.tgisinternal
	   AND c.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = 'sync_commits'::regclass)
	   AND c.relname LIKE 'sync\_%'
	 ORDER BY c.relname, t.tgname`, func(r pgx.Rows) error {
		var tg Trigger
		if err := r.Scan(&tg.Name, &tg.Table, &tg.Definition, &tg.Function, &tg.Comment); err != nil {
			return err
		}
		cat.Triggers = append(cat.Triggers, tg)
		return nil
	})
	if err != nil {
		return nil, err
	}

	err = each(ctx, q, `SELECT rolname FROM pg_roles WHERE rolname IN ('sync_reader', 'sync_writer', 'sync_backfill', 'sync_admin')`,
		func(r pgx.Rows) error {
			var n string
			if err := r.Scan(&n); err != nil {
				return err
			}
			cat.Roles = append(cat.Roles, n)
			return nil
		})
	if err != nil {
		return nil, err
	}
	sort.Slice(cat.Roles, func(i, j int) bool { return roleRank(cat.Roles[i]) < roleRank(cat.Roles[j]) })
	return cat, nil
}

func each(ctx context.Context, q Querier, sql string, fn func(pgx.Rows) error) error {
	rows, err := q.Query(ctx, sql)
	if err != nil {
		return fmt.Errorf("sqlref: read the catalog: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return fmt.Errorf("sqlref: read the catalog: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlref: read the catalog: %w", err)
	}
	return nil
}
