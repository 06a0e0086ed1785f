package tests

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// markerSchema is version 2 of an application with two tables, so a stored
// table the configured schema lacks can be tested.
func markerSchema() gosync.Schema {
	return gosync.Schema{Version: 2, Tables: []gosync.Table{
		{Name: "todos", Columns: []gosync.Column{{Name: "id", Type: gosync.TypeString}, {Name: "title", Type: gosync.TypeString}, {Name: "owner_id", Type: gosync.TypeString, Nullable: true}}},
		{Name: "lists", Columns: []gosync.Column{{Name: "id", Type: gosync.TypeString}}},
	}}
}

var markerDDL = &gosync.SchemaChangeOptions{DDL: func(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `CREATE TABLE todos (id text PRIMARY KEY, title text NOT NULL, owner_id text);
		CREATE TABLE lists (id text PRIMARY KEY)`)
	return err
}}

func markerState(t *testing.T, d *pgtest.DB) string {
	t.Helper()
	var s string
	if err := d.Pool.QueryRow(context.Background(),
		`SELECT coalesce((SELECT format('%s', m) FROM sync_schema_meta m), 'none')`).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s + " | " + barrierState(t, d)
}

// upstreamWords: the refusal as a DBA reads it at psql, without the Go
// sentinel in front.
const (
	tooNewWords   = "stored schema version 2 is newer than the configured schema (1) — refusing to run an older server against a migrated database"
	mismatchWords = "stored schema layouts disagree with the configured schema at version 2 (%s) — refusing to serve a database whose stored rows the running code cannot decode"
)

// TestSchemaMarkerRulesOnce: each violation of the marker rules is refused
// alike by a server's start-up check (EnsureSchema, mapped to its sentinel),
// by sync_check_schema_version and by a DBA's bump through
// sync_set_schema_version — the same words, SQLSTATE 55000 — and a refused
// call changes nothing.
func TestSchemaMarkerRulesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	s := gosync.New(d.Pool)
	if err := s.EnsureSchema(ctx, markerSchema(), nil, markerDDL); err != nil {
		t.Fatal(err)
	}
	if err := s.EnsureSchema(ctx, markerSchema(), nil, nil); err != nil {
		t.Fatalf("same schema again: %v", err)
	}

	variant := func(edit func(*gosync.Schema)) gosync.Schema {
		sc := markerSchema()
		edit(&sc)
		return sc
	}
	cases := []struct {
		name   string
		schema gosync.Schema
		kind   error
		words  string
	}{
		{"stored version newer", variant(func(sc *gosync.Schema) { sc.Version = 1 }), gosync.ErrSchemaTooNew, tooNewWords},
		{"column type", variant(func(sc *gosync.Schema) { sc.Tables[0].Columns[1].Type = gosync.TypeJSON }), gosync.ErrSchemaMismatch, `table "todos" column "title"`},
		{"column nullable", variant(func(sc *gosync.Schema) { sc.Tables[0].Columns[2].Nullable = false }), gosync.ErrSchemaMismatch, `table "todos" column "owner_id"`},
		{"column name", variant(func(sc *gosync.Schema) { sc.Tables[0].Columns[1].Name = "name" }), gosync.ErrSchemaMismatch, `table "todos" column "name"`},
		{"extra column", variant(func(sc *gosync.Schema) {
			sc.Tables[0].Columns = append(sc.Tables[0].Columns, gosync.Column{Name: "due", Type: gosync.TypeInteger})
		}), gosync.ErrSchemaMismatch, `table "todos" column "due"`},
		{"missing column", variant(func(sc *gosync.Schema) { sc.Tables[0].Columns = sc.Tables[0].Columns[:2] }), gosync.ErrSchemaMismatch, `table "todos" column "owner_id"`},
		{"extra stored table", variant(func(sc *gosync.Schema) { sc.Tables = sc.Tables[:1] }), gosync.ErrSchemaMismatch, `table "lists"`},
		{"configured table not stored", variant(func(sc *gosync.Schema) {
			sc.Tables = append(sc.Tables, gosync.Table{Name: "notes", Columns: []gosync.Column{{Name: "id", Type: gosync.TypeString}}})
		}), gosync.ErrSchemaMismatch, `table "notes" column "id"`},
		{"first table in declaration order", variant(func(sc *gosync.Schema) {
			sc.Tables[0].Columns[0].Type = gosync.TypeInteger
			sc.Tables[1].Columns[0].Type = gosync.TypeInteger
		}), gosync.ErrSchemaMismatch, `table "todos" column "id"`},
	}
	for _, c := range cases {
		words := c.words
		if c.kind == gosync.ErrSchemaMismatch {
			words = strings.Replace(mismatchWords, "%s", c.words, 1)
		}
		before := markerState(t, d)

		// The start-up check.
		err := s.EnsureSchema(ctx, c.schema, nil, nil)
		if !errors.Is(err, c.kind) {
			t.Errorf("%s: EnsureSchema: %v, want %v", c.name, err, c.kind)
		} else if want := "gosync: " + words; err.Error() != want { // the upstream sentence, once
			t.Errorf("%s: EnsureSchema says\n%s\nwant\n%s", c.name, err, want)
		}
		var pg *pgconn.PgError
		if !errors.As(err, &pg) || pg.Code != "55000" || pg.Message != words {
			t.Errorf("%s: EnsureSchema's server error = %+v, want 55000 %q", c.name, pg, words)
		}

		// The same rule from SQL: the check, and a DBA's bump at psql.
		layouts := layoutsJSON(t, c.schema)
		_, err = d.Pool.Exec(ctx, "SELECT sync_check_schema_version($1, $2)", c.schema.Version, layouts)
		if !errors.As(err, &pg) || pg.Code != "55000" || pg.Message != words {
			t.Errorf("%s: sync_check_schema_version: %v, want 55000 %q", c.name, err, words)
		}
		err = pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SELECT sync_begin_schema_change()"); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "SELECT sync_set_schema_version("+strconv.FormatInt(c.schema.Version, 10)+", '"+layouts+"')",
				pgx.QueryExecModeSimpleProtocol)
			return err
		})
		if !errors.As(err, &pg) || pg.Code != "55000" || pg.Message != words {
			t.Errorf("%s: sync_set_schema_version: %v, want 55000 %q", c.name, err, words)
		}
		if mapped := gosync.MapError(err); !errors.Is(mapped, c.kind) {
			t.Errorf("%s: MapError(sync_set_schema_version's refusal) = %v, want %v", c.name, mapped, c.kind)
		}
		if after := markerState(t, d); after != before {
			t.Errorf("%s: a refused call changed the state:\nbefore %s\nafter  %s", c.name, before, after)
		}
	}

	// Other 55000 errors are not marker refusals.
	_, err := d.Pool.Exec(ctx, "SELECT sync_set_schema_version(9)")
	if sqlState(err) != "55000" {
		t.Fatalf("bump without the lock: %v, want 55000", err)
	}
	if mapped := gosync.MapError(err); errors.Is(mapped, gosync.ErrSchemaTooNew) || errors.Is(mapped, gosync.ErrSchemaMismatch) {
		t.Fatalf("the missing-lock error mapped to %v", mapped)
	}
}

// layoutsJSON is the marker text EnsureSchema writes for sc (table name →
// ordered columns), built from the stored marker's own format.
func layoutsJSON(t *testing.T, sc gosync.Schema) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("{")
	for i, tb := range sc.Tables {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(strconv.Quote(tb.Name) + ":[")
		for j, c := range tb.Columns {
			if j > 0 {
				b.WriteString(",")
			}
			b.WriteString(`{"name":` + strconv.Quote(c.Name) + `,"type":` + strconv.Quote(c.Type) + `,"nullable":` + strconv.FormatBool(c.Nullable) + "}")
		}
		b.WriteString("]")
	}
	b.WriteString("}")
	return b.String()
}

// TestSchemaMarkerFunctionsForEveryRole: the start-up check's functions and
// the pending view hold for every sync role: each role runs EnsureSchema's
// checks and reads sync_pending_checkpoints; a violating call (bad
// arguments, a newer marker, undeclared checkpoints) is refused the same way
// for each and changes nothing; sync_admin's bump below the marker gets the
// same words; a login without a sync role is denied.
func TestSchemaMarkerFunctionsForEveryRole(t *testing.T) {
	// Serial: it logs in as members of the cluster-wide sync_* roles.
	ctx := context.Background()
	d := pgtest.New(t)
	owner := gosync.New(d.Pool)
	if err := owner.EnsureSchema(ctx, markerSchema(), []gosync.CheckpointDeclaration{{Partition: "p1", Name: "proj", SchemaVersion: 2}}, markerDDL); err != nil {
		t.Fatal(err)
	}
	layouts := layoutsJSON(t, markerSchema())
	declared := []gosync.CheckpointDeclaration{{Partition: "p1", Name: "proj", SchemaVersion: 2}}

	type call struct {
		name, sql string
		args      []any
		want      string // "" allowed, else the SQLSTATE
	}
	calls := []call{
		{"check the marker", "SELECT sync_check_schema_version($1, $2)", []any{2, layouts}, ""},
		{"check a NULL version", "SELECT sync_check_schema_version(NULL, $1)", []any{layouts}, "22023"},
		{"check NULL layouts", "SELECT sync_check_schema_version(2, NULL)", nil, "22023"},
		{"check a version too large", "SELECT sync_check_schema_version(3000000000, '{}')", nil, "22023"},
		{"check an older configured version", "SELECT sync_check_schema_version(1, '{}')", nil, "55000"},
		{"check other layouts", "SELECT sync_check_schema_version(2, '{}')", nil, "55000"},
		{"first undeclared", "SELECT * FROM sync_first_undeclared_checkpoint(2, '{}', '{p1}', '{proj}')", nil, ""},
		{"first undeclared, NULL names", "SELECT * FROM sync_first_undeclared_checkpoint(2, NULL)", nil, "22023"},
		{"first undeclared, NULL element", "SELECT * FROM sync_first_undeclared_checkpoint(2, '{}', ARRAY[NULL], '{proj}')", nil, "22023"},
		{"first undeclared, lengths differ", "SELECT * FROM sync_first_undeclared_checkpoint(2, '{}', '{p1,p2}', '{proj}')", nil, "22023"},
		{"first undeclared, negative version", "SELECT * FROM sync_first_undeclared_checkpoint(-1)", nil, "22023"},
		{"assert declarations", "SELECT sync_assert_declarations('{}', '{a}', '{}')", nil, "22023"},
		{"read the pending view", "SELECT count(*) FROM sync_pending_checkpoints", nil, ""},
	}
	for _, group := range []string{"sync_reader", "sync_writer", "sync_backfill", "sync_admin", ""} {
		pool := loginAs(t, d, group, nil)
		before := markerState(t, d)
		for _, c := range calls {
			want := c.want
			if group == "" {
				want = "42501"
			}
			_, err := pool.Exec(ctx, c.sql, c.args...)
			if got := sqlState(err); got != want {
				t.Errorf("%s: %s: SQLSTATE %q (%v), want %q", roleName(group), c.name, got, err, want)
			}
		}
		// A DBA's bump below the marker: sync_admin gets the marker rule's
		// words; every other role is denied the bump itself.
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SELECT sync_begin_schema_change()"); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "SELECT sync_set_schema_version(1, '{}')")
			return err
		})
		var pg *pgconn.PgError
		if group == "sync_admin" {
			if !errors.As(err, &pg) || pg.Code != "55000" || pg.Message != tooNewWords {
				t.Errorf("sync_admin: lowering the marker: %v, want 55000 %q", err, tooNewWords)
			}
		} else if sqlState(err) != "42501" {
			t.Errorf("%s: bump: %v, want 42501", roleName(group), err)
		}
		s := gosync.New(pool)
		err = s.EnsureSchema(ctx, markerSchema(), declared, nil)
		if group == "" {
			if sqlState(err) != "42501" {
				t.Errorf("no sync role: EnsureSchema: %v, want 42501", err)
			}
		} else {
			if err != nil {
				t.Errorf("%s: EnsureSchema at the stored schema: %v", roleName(group), err)
			}
			older := markerSchema()
			older.Version = 1
			if err := s.EnsureSchema(ctx, older, nil, nil); !errors.Is(err, gosync.ErrSchemaTooNew) {
				t.Errorf("%s: EnsureSchema of an older schema: %v, want ErrSchemaTooNew", roleName(group), err)
			}
			other := markerSchema()
			other.Tables = other.Tables[:1]
			if err := s.EnsureSchema(ctx, other, declared, nil); !errors.Is(err, gosync.ErrSchemaMismatch) {
				t.Errorf("%s: EnsureSchema of other layouts: %v, want ErrSchemaMismatch", roleName(group), err)
			}
			if err := s.EnsureSchema(ctx, markerSchema(), nil, nil); !errors.Is(err, gosync.ErrCheckpointIncomplete) ||
				!strings.Contains(err.Error(), `checkpoint "proj" of partition "p1"`) {
				t.Errorf("%s: EnsureSchema without declarations: %v, want ErrCheckpointIncomplete naming p1/proj", roleName(group), err)
			}
		}
		if after := markerState(t, d); after != before {
			t.Errorf("%s: the calls changed the state:\nbefore %s\nafter  %s", roleName(group), before, after)
		}
	}
}

// TestFirstUndeclaredDoesNotScanPending: "not declared" stays index-driven
// at 10^5 pending checkpoints, called alone (a server's start-up check,
// through EnsureSchema) as inside sync_serve_check: every read of the
// checkpoints is an index scan returning at most one row.
func TestFirstUndeclaredDoesNotScanPending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	fillPending(t, d.Pool, 100_000)

	conn, plans := explainingConn(t, d.URL, "SET auto_explain.log_analyze = on")
	for i := 0; i < 8; i++ {
		var p, n *string
		err := conn.QueryRow(ctx, `SELECT * FROM sync_first_undeclared_checkpoint(2, '{proj}', '{w0100000}', '{other}')`).Scan(&p, &n)
		if err != nil || p != nil || n != nil {
			t.Fatalf("first undeclared = %v %v, %v; want none", p, n, err)
		}
	}
	// The start-up check: undeclared 'other' is found without a scan.
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		return gosync.New(d.Pool).WithTx(tx).EnsureSchema(ctx, gosync.Schema{Version: 2},
			[]gosync.CheckpointDeclaration{{AllPartitions: true, Name: "proj", SchemaVersion: 2}}, nil)
	})
	if !errors.Is(err, gosync.ErrCheckpointIncomplete) || !strings.Contains(err.Error(), `"other" of partition "w0100000"`) {
		t.Fatalf("EnsureSchema: %v, want ErrCheckpointIncomplete naming w0100000/other", err)
	}
	// Per call: the names proj, other (and its partition) and the end.
	assertOneRowIndexReads(t, plans(), "sync_backfill_checkpoints_pending", 9*4)
}

// TestServeGateStillInlines: reading "pending" through the view keeps
// sync_serve_gate inlinable (no function scan in the caller's plan) and,
// with most checkpoints activated, served by the partial index.
func TestServeGateStillInlines(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	fillPending(t, d.Pool, 10_000)
	// The steady state: most checkpoints activated, one pending.
	if _, err := d.Pool.Exec(ctx, "UPDATE sync_backfill_checkpoints SET state = 'activated' WHERE name = 'proj'; ANALYZE sync_backfill_checkpoints"); err != nil {
		t.Fatal(err)
	}
	conn := d.Conn(t)
	for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
		if _, err := conn.Exec(ctx, "SET plan_cache_mode = "+mode); err != nil {
			t.Fatal(err)
		}
		rows, err := conn.Query(ctx, "EXPLAIN SELECT * FROM sync_serve_gate($1, $2)", "p1", 2)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		plan := strings.Join(lines, "\n")
		if strings.Contains(plan, "Function Scan") || !strings.Contains(plan, "sync_backfill_checkpoints_pending") {
			t.Fatalf("%s: sync_serve_gate is not inlined over the pending index:\n%s", mode, plan)
		}
	}
}
