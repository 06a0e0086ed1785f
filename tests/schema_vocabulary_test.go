package tests

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// The schema upstream booted for layouts.md (version 1, declaration order
// projects, tasks, vault, labels), and the marker text it wrote for it.
func upstreamLayoutsSchema() gosync.Schema {
	c := func(name, typ string, nullable bool) gosync.Column {
		return gosync.Column{Name: name, Type: typ, Nullable: nullable}
	}
	return gosync.Schema{Version: 1, Tables: []gosync.Table{
		{Name: "projects", Columns: []gosync.Column{c("id", "string", false), c("org_id", "string", false), c("name", "string", false),
			c("budget", "float", true), c("meta", "json", true), c("archived", "boolean", false), c("logo", "bytes", true), c("notes", "crdt", true)}},
		{Name: "tasks", Columns: fixtureTasksV1()},
		{Name: "vault", Columns: []gosync.Column{c("id", "string", false), c("owner_id", "string", false), c("secret", "bytes", false), c("extra", "bytes", true)}},
		{Name: "labels", Columns: []gosync.Column{c("id", "integer", false), c("org_id", "string", false), c("slug", "string", false), c("color", "string", true)}},
	}}
}

const upstreamLayoutsText = `{"projects":[{"name":"id","type":"string","nullable":false},{"name":"org_id","type":"string","nullable":false},{"name":"name","type":"string","nullable":false},{"name":"budget","type":"float","nullable":true},{"name":"meta","type":"json","nullable":true},{"name":"archived","type":"boolean","nullable":false},{"name":"logo","type":"bytes","nullable":true},{"name":"notes","type":"crdt","nullable":true}],"tasks":[{"name":"id","type":"string","nullable":false},{"name":"org_id","type":"string","nullable":false},{"name":"project_id","type":"string","nullable":false},{"name":"title","type":"string","nullable":false},{"name":"done","type":"boolean","nullable":false},{"name":"priority","type":"integer","nullable":true},{"name":"tags","type":"json","nullable":true},{"name":"attachment","type":"blob_ref","nullable":true}],"vault":[{"name":"id","type":"string","nullable":false},{"name":"owner_id","type":"string","nullable":false},{"name":"secret","type":"bytes","nullable":false},{"name":"extra","type":"bytes","nullable":true}],"labels":[{"name":"id","type":"integer","nullable":false},{"name":"org_id","type":"string","nullable":false},{"name":"slug","type":"string","nullable":false},{"name":"color","type":"string","nullable":true}]}`

func fixtureTasksV1() []gosync.Column {
	return []gosync.Column{{Name: "id", Type: "string"}, {Name: "org_id", Type: "string"}, {Name: "project_id", Type: "string"},
		{Name: "title", Type: "string"}, {Name: "done", Type: "boolean"}, {Name: "priority", Type: "integer", Nullable: true},
		{Name: "tags", Type: "json", Nullable: true}, {Name: "attachment", Type: "blob_ref", Nullable: true}}
}

// fixtureSchema is the schema of fixture-upstream-db.sql at version 2:
// projects, and tasks with assignee appended by the v1 → v2 bump.
func fixtureSchema() gosync.Schema {
	s := upstreamLayoutsSchema()
	s.Version = 2
	s.Tables = s.Tables[:2]
	s.Tables[1].Columns = append(fixtureTasksV1(), gosync.Column{Name: "assignee", Type: "string", Nullable: true})
	return s
}

// TestLayoutsTextIsUpstreams: the marker text gosync writes is upstream's,
// byte for byte (layouts.md §1: 1238 bytes, its md5), tables in declaration
// order; each codec type maps to upstream's Postgres column type (§2).
func TestLayoutsTextIsUpstreams(t *testing.T) {
	t.Parallel()
	got := upstreamLayoutsSchema().Layouts()
	sum := md5.Sum([]byte(got))
	if got != upstreamLayoutsText || len(got) != 1238 || hex.EncodeToString(sum[:]) != "02a52408af5cecf673114edca8a19c79" {
		t.Fatalf("layouts (%d bytes, md5 %x):\n%s\nwant upstream's:\n%s", len(got), sum, got, upstreamLayoutsText)
	}
	want := map[string]string{"string": "text", "integer": "bigint", "float": "double precision", "boolean": "boolean",
		"json": "jsonb", "bytes": "bytea", "blob_ref": "text", "crdt": "bytea", "text": "", "bigint": "", "jsonb": "", "bytea": ""}
	for typ, pg := range want {
		if got := (gosync.Column{Name: "c", Type: typ}).PostgresType(); got != pg {
			t.Errorf("PostgresType(%q) = %q, want %q", typ, got, pg)
		}
		err := gosync.Schema{Version: 1, Tables: []gosync.Table{{Name: "t", Columns: []gosync.Column{{Name: "c", Type: typ}}}}}.Validate()
		if (err == nil) != (pg != "") {
			t.Errorf("Validate type %q: %v", typ, err)
		}
	}
	// JSON.stringify's escapes, not encoding/json's: '<', '&' and U+2028
	// stay literal, control characters get \n or \u00xx.
	odd := gosync.Schema{Version: 1, Tables: []gosync.Table{{Name: "a<&\u2028\"\\\n\x01é", Columns: []gosync.Column{{Name: "c", Type: "string"}}}}}
	if got, want := odd.Layouts(), `{"a<&`+"\u2028"+`\"\\\n\u0001é":[{"name":"c","type":"string","nullable":false}]}`; got != want {
		t.Errorf("layouts = %s, want %s", got, want)
	}
}

// loadFixture loads fixture-upstream-db.sql (a database upstream 0.15.48
// created and filled, marker at 2) on its own connection — pg_dump's
// set_config empties that session's search_path — and adopts it.
func loadFixture(t *testing.T) (*pgtest.DB, *gosync.Store) {
	t.Helper()
	ctx := context.Background()
	d := pgtest.NewEmpty(t)
	conn := d.Conn(t)
	execFileOn(t, conn, "testdata/fixture-upstream-db.sql")
	if err := conn.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := gosync.Migrate(ctx, d.Pool); err != nil {
		t.Fatalf("adopting the upstream fixture: %v", err)
	}
	return d, gosync.New(d.Pool)
}

func execFileOn(t *testing.T, conn *pgx.Conn, path string) {
	t.Helper()
	sql, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), string(sql)); err != nil { // one session: the file's SETs stay in it
		t.Fatalf("%s: %v", path, err)
	}
}

func marker(t *testing.T, d *pgtest.DB) (int64, string) {
	t.Helper()
	var v int64
	var l string
	if err := d.Pool.QueryRow(context.Background(), "SELECT schema_version, layouts FROM sync_schema_meta WHERE id = 1").Scan(&v, &l); err != nil {
		t.Fatal(err)
	}
	return v, l
}

// TestUpstreamMarkerAcceptedByGo: on the database upstream built, gosync's
// start-up check accepts upstream's marker for the same schema and changes
// nothing; the text gosync would write for it is the stored text, byte for
// byte; another schema at the same version is refused.
func TestUpstreamMarkerAcceptedByGo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := loadFixture(t)
	v, stored := marker(t, d)
	if v != 2 || stored != fixtureSchema().Layouts() {
		t.Fatalf("fixture marker %d %s\nwant 2 %s", v, stored, fixtureSchema().Layouts())
	}
	before := markerState(t, d)
	if err := s.EnsureSchema(ctx, fixtureSchema(), nil, nil); err != nil {
		t.Fatalf("gosync refuses upstream's marker for the same schema: %v", err)
	}
	if relation := queryOne[string](t, d.Pool, "SELECT sync_check_schema_version(2, $1)", fixtureSchema().Layouts()); relation != "same" {
		t.Fatalf("sync_check_schema_version on upstream's marker = %q, want same", relation)
	}
	// The tables in another order are the same layouts.
	swapped := fixtureSchema()
	swapped.Tables[0], swapped.Tables[1] = swapped.Tables[1], swapped.Tables[0]
	if err := s.EnsureSchema(ctx, swapped, nil, nil); err != nil {
		t.Fatalf("the same tables in another order: %v", err)
	}
	retyped := fixtureSchema()
	retyped.Tables[1].Columns[7].Type = gosync.TypeString // attachment is a blob_ref
	if err := s.EnsureSchema(ctx, retyped, nil, nil); !errors.Is(err, gosync.ErrSchemaMismatch) ||
		!strings.Contains(err.Error(), `(table "tasks" column "attachment")`) {
		t.Fatalf("blob_ref declared as string: %v, want ErrSchemaMismatch naming tasks.attachment", err)
	}
	if after := markerState(t, d); after != before {
		t.Fatalf("the checks changed the marker or barrier:\n%s", lineDiff(before, after))
	}
	// The physical columns upstream created have the types gosync maps the
	// codec types to.
	for _, tb := range fixtureSchema().Tables {
		for _, c := range tb.Columns {
			got := queryOne[string](t, d.Pool, `SELECT format_type(atttypid, atttypmod) FROM pg_attribute
				WHERE attrelid = $1::regclass AND attname = $2 AND NOT attisdropped`, tb.Name, c.Name)
			if got != c.PostgresType() {
				t.Errorf("%s.%s: upstream created %s, gosync maps %s to %s", tb.Name, c.Name, got, c.Type, c.PostgresType())
			}
		}
	}
}

// TestGoMarkerIsUpstreams writes the marker through gosync (EnsureSchema,
// and a DBA's sync_set_schema_version) and checks it the way upstream does:
// the stored text is what upstream writes and compares, byte for byte; then
// upstream's own statement writes it and gosync's check accepts it.
func TestGoMarkerIsUpstreams(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	s := gosync.New(d.Pool)
	if err := s.EnsureSchema(ctx, upstreamLayoutsSchema(), nil, &gosync.SchemaChangeOptions{DDL: createTables(upstreamLayoutsSchema())}); err != nil {
		t.Fatal(err)
	}
	if v, l := marker(t, d); v != 1 || l != upstreamLayoutsText {
		t.Fatalf("gosync wrote %d %s\nupstream writes 1 %s", v, l, upstreamLayoutsText)
	}
	// The other way: upstream's statement (schema-bump.md §1) writes its text
	// at version 2; gosync accepts it for the same schema.
	mustExec(t, d.Pool, `INSERT INTO sync_schema_meta(id, schema_version, layouts) VALUES (1, $1, $2)
		ON CONFLICT (id) DO UPDATE SET schema_version=EXCLUDED.schema_version, layouts=EXCLUDED.layouts`, 2, upstreamLayoutsText)
	v2 := upstreamLayoutsSchema()
	v2.Version = 2
	if err := s.EnsureSchema(ctx, v2, nil, nil); err != nil {
		t.Fatalf("gosync refuses upstream's statement's marker: %v", err)
	}
}

// TestSchemaBumpUpstreamRules: on the fixture, a bump only appends nullable
// columns; removing, retyping, inserting in the middle or appending a
// non-nullable column is refused in upstream's words by EnsureSchema, by
// sync_check_schema_version and by a DBA's bump, and changes nothing; the
// same version with other columns changes nothing; dropping a table is
// accepted; the marker a bump writes is the one upstream writes.
func TestSchemaBumpUpstreamRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := loadFixture(t)
	v3 := func(edit func(tasks *[]gosync.Column)) gosync.Schema {
		sc := fixtureSchema()
		sc.Version = 3
		edit(&sc.Tables[1].Columns)
		return sc
	}
	cases := []struct {
		name   string
		schema gosync.Schema
		words  string
	}{
		{"a non-nullable column", v3(func(c *[]gosync.Column) { *c = append(*c, gosync.Column{Name: "x", Type: "string"}) }),
			`table "tasks": added column "x" must be nullable — existing rows have no value to backfill`},
		{"the last column removed", v3(func(c *[]gosync.Column) { *c = (*c)[:8] }),
			`the schema removed columns — only appending nullable columns is supported; table "tasks" keeps 8 of its 9 stored columns`},
		{"a column retyped", v3(func(c *[]gosync.Column) { (*c)[8].Type = "json" }),
			`table "tasks": column 8 changed ({"name":"assignee","type":"string","nullable":true} → {"name":"assignee","type":"json","nullable":true}) — only appending nullable columns is supported`},
		{"a column inserted in the middle", v3(func(c *[]gosync.Column) {
			*c = append((*c)[:2], append([]gosync.Column{{Name: "mid", Type: "string", Nullable: true}}, (*c)[2:]...)...)
		}), `table "tasks": column 2 changed ({"name":"project_id","type":"string","nullable":false} → {"name":"mid","type":"string","nullable":true}) — only appending nullable columns is supported`},
	}
	before := markerState(t, d)
	for _, c := range cases {
		ddlRan := false
		err := s.EnsureSchema(ctx, c.schema, nil, &gosync.SchemaChangeOptions{DDL: func(context.Context, pgx.Tx) error { ddlRan = true; return nil }})
		var pg *pgconn.PgError
		if !errors.Is(err, gosync.ErrSchemaMismatch) || !errors.As(err, &pg) || pg.Code != "55000" || pg.Message != c.words || ddlRan {
			t.Errorf("%s: EnsureSchema = %v (DDL ran: %v), want ErrSchemaMismatch, 55000 %q", c.name, err, ddlRan, c.words)
		}
		_, err = d.Pool.Exec(ctx, "SELECT sync_check_schema_version(3, $1)", c.schema.Layouts())
		if !errors.As(err, &pg) || pg.Message != c.words {
			t.Errorf("%s: sync_check_schema_version = %v", c.name, err)
		}
		err = pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SELECT sync_begin_schema_change()"); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "SELECT sync_set_schema_version(3, $1)", c.schema.Layouts())
			return err
		})
		if !errors.As(err, &pg) || pg.Message != c.words {
			t.Errorf("%s: a DBA's bump = %v", c.name, err)
		}
		if after := markerState(t, d); after != before {
			t.Fatalf("%s: a refused bump changed state:\n%s", c.name, lineDiff(before, after))
		}
	}

	// Same version, another column: upstream skips its DDL; gosync runs none
	// either and refuses to serve (same version, same layouts).
	same := fixtureSchema()
	same.Tables[1].Columns = append(same.Tables[1].Columns, gosync.Column{Name: "x", Type: "string", Nullable: true})
	if err := s.EnsureSchema(ctx, same, nil, &gosync.SchemaChangeOptions{DDL: func(context.Context, pgx.Tx) error {
		return errors.New("DDL at the same version")
	}}); !errors.Is(err, gosync.ErrSchemaMismatch) {
		t.Fatalf("same version, another column: %v", err)
	}
	if after := markerState(t, d); after != before {
		t.Fatalf("same version with other columns changed state:\n%s", lineDiff(before, after))
	}

	// Appending a nullable column is the bump; the marker is what upstream
	// writes: the v2 text with the column appended.
	ok := v3(func(c *[]gosync.Column) { *c = append(*c, gosync.Column{Name: "due", Type: "integer", Nullable: true}) })
	if err := s.EnsureSchema(ctx, ok, nil, nil); err != nil {
		t.Fatalf("appending a nullable column: %v", err)
	}
	wantText := strings.Replace(fixtureSchema().Layouts(), `"nullable":true}]}`, `"nullable":true},{"name":"due","type":"integer","nullable":true}]}`, 1)
	if v, l := marker(t, d); v != 3 || l != wantText {
		t.Fatalf("marker after the bump %d %s\nwant 3 %s", v, l, wantText)
	}
	// Dropping a table is a bump too.
	dropped := ok
	dropped.Version = 4
	dropped.Tables = dropped.Tables[1:]
	if err := s.EnsureSchema(ctx, dropped, nil, nil); err != nil {
		t.Fatalf("dropping projects: %v", err)
	}
	if v, l := marker(t, d); v != 4 || strings.Contains(l, "projects") || l != dropped.Layouts() {
		t.Fatalf("marker after dropping projects %d %s", v, l)
	}
}

// TestLegacyMarkerMigratesForward: a marker an older gosync wrote with
// Postgres type names is rewritten in the codec vocabulary by the first
// EnsureSchema at its version, where the configured codec types say which
// type each text or bytea column was; a bump over it checks the same way.
// A stored type with no codec type is refused with the remedy, and the
// remedy works.
func TestLegacyMarkerMigratesForward(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	s := gosync.New(d.Pool)
	mustExec(t, d.Pool, "CREATE TABLE notes (id text PRIMARY KEY, body text, ref text, doc bytea, blob bytea, n bigint, f double precision, j jsonb, b boolean)")
	legacy := `{"notes":[{"name":"id","type":"text","nullable":false},{"name":"body","type":"text","nullable":true},` +
		`{"name":"ref","type":"text","nullable":true},{"name":"doc","type":"bytea","nullable":true},{"name":"blob","type":"bytea","nullable":true},` +
		`{"name":"n","type":"bigint","nullable":true},{"name":"f","type":"double precision","nullable":true},{"name":"j","type":"jsonb","nullable":true},` +
		`{"name":"b","type":"boolean","nullable":true}]}`
	mustExec(t, d.Pool, "INSERT INTO sync_schema_meta (id, schema_version, layouts) VALUES (1, 1, $1)", legacy)
	n := func(name, typ string, nullable bool) gosync.Column {
		return gosync.Column{Name: name, Type: typ, Nullable: nullable}
	}
	schema := gosync.Schema{Version: 1, Tables: []gosync.Table{{Name: "notes", Columns: []gosync.Column{n("id", "string", false),
		n("body", "string", true), n("ref", "blob_ref", true), n("doc", "crdt", true), n("blob", "bytes", true),
		n("n", "integer", true), n("f", "float", true), n("j", "json", true), n("b", "boolean", true)}}}}

	// A configured type the old name cannot be (text is no json) still
	// disagrees, and nothing is rewritten.
	wrong := gosync.Schema{Version: 1, Tables: []gosync.Table{{Name: "notes", Columns: append([]gosync.Column{n("id", "json", false)}, schema.Tables[0].Columns[1:]...)}}}
	if err := s.EnsureSchema(ctx, wrong, nil, nil); !errors.Is(err, gosync.ErrSchemaMismatch) || !strings.Contains(err.Error(), `column "id"`) {
		t.Fatalf("legacy text as json: %v", err)
	}
	if _, l := marker(t, d); l != legacy {
		t.Fatalf("a refused check rewrote the marker: %s", l)
	}
	if relation := queryOne[string](t, d.Pool, "SELECT sync_check_schema_version(1, $1)", schema.Layouts()); relation != "legacy" {
		t.Fatalf("relation = %q, want legacy", relation)
	}
	if err := s.EnsureSchema(ctx, schema, nil, nil); err != nil {
		t.Fatalf("EnsureSchema over a legacy marker: %v", err)
	}
	if v, l := marker(t, d); v != 1 || l != schema.Layouts() {
		t.Fatalf("legacy marker not rewritten: %d %s\nwant 1 %s", v, l, schema.Layouts())
	}
	if relation := queryOne[string](t, d.Pool, "SELECT sync_check_schema_version(1, $1)", schema.Layouts()); relation != "same" {
		t.Fatalf("after the rewrite: %q, want same", relation)
	}

	// A bump over a legacy marker: the old names match, the appended
	// column must be nullable as always.
	mustExec(t, d.Pool, "UPDATE sync_schema_meta SET layouts = $1", legacy)
	v2 := schema
	v2.Version = 2
	v2.Tables = []gosync.Table{{Name: "notes", Columns: append(append([]gosync.Column{}, schema.Tables[0].Columns...), n("extra", "string", true))}}
	if err := s.EnsureSchema(ctx, v2, nil, &gosync.SchemaChangeOptions{DDL: func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "ALTER TABLE notes ADD COLUMN extra text")
		return err
	}}); err != nil {
		t.Fatalf("bump over a legacy marker: %v", err)
	}
	if v, l := marker(t, d); v != 2 || l != v2.Layouts() {
		t.Fatalf("bump over a legacy marker wrote %d %s", v, l)
	}

	// A type with no codec counterpart: refused, with the remedy; nothing
	// changes; the remedy then works.
	mustExec(t, d.Pool, "CREATE TABLE events (id uuid PRIMARY KEY)")
	mustExec(t, d.Pool, "UPDATE sync_schema_meta SET layouts = $1", `{"events":[{"name":"id","type":"uuid","nullable":false}]}`)
	events := gosync.Schema{Version: 2, Tables: []gosync.Table{{Name: "events", Columns: []gosync.Column{n("id", "string", false)}}}}
	before := markerState(t, d)
	err := s.EnsureSchema(ctx, events, nil, nil)
	var pg *pgconn.PgError
	if !errors.Is(err, gosync.ErrSchemaMismatch) || !errors.As(err, &pg) ||
		!strings.Contains(pg.Message, `(table "events" column "id": the marker names the Postgres type "uuid", which has no row-codec type)`) ||
		!strings.Contains(pg.Hint, "ALTER TABLE events ALTER COLUMN id TYPE text USING id::text") ||
		!strings.Contains(pg.Hint, "UPDATE sync_schema_meta SET layouts = <the configured layouts> WHERE id = 1") ||
		!strings.Contains(err.Error(), pg.Hint) {
		t.Fatalf("uuid marker: %v (hint %q)", err, pg.Hint)
	}
	if after := markerState(t, d); after != before {
		t.Fatalf("the refusal changed state:\n%s", lineDiff(before, after))
	}
	mustExec(t, d.Pool, "ALTER TABLE events ALTER COLUMN id TYPE text USING id::text")
	mustExec(t, d.Pool, "UPDATE sync_schema_meta SET layouts = $1 WHERE id = 1", events.Layouts())
	if err := s.EnsureSchema(ctx, events, nil, nil); err != nil {
		t.Fatalf("after the remedy: %v", err)
	}
}

// createTables is a bump's DDL creating each table with its codec columns'
// Postgres types (the app-table DDL itself is the caller's).
func createTables(sc gosync.Schema) func(context.Context, pgx.Tx) error {
	return func(ctx context.Context, tx pgx.Tx) error {
		for _, tb := range sc.Tables {
			var cols []string
			for _, c := range tb.Columns {
				cols = append(cols, pgx.Identifier{c.Name}.Sanitize()+" "+c.PostgresType())
			}
			if _, err := tx.Exec(ctx, "CREATE TABLE "+pgx.Identifier{tb.Name}.Sanitize()+" ("+strings.Join(cols, ", ")+")"); err != nil {
				return err
			}
		}
		return nil
	}
}
