package tests

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

func TestEnsureSchemaBumpInstallsMarkerAndCheckpoints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := v1DB(t)
	// Idempotent at the same version.
	if err := s.EnsureSchema(ctx, todosSchema(1), nil, todosDDL(1)); err != nil {
		t.Fatalf("same version again: %v", err)
	}
	if err := s.EnsureSchema(ctx, todosSchema(2), []gosync.CheckpointDeclaration{todosByOwner}, todosDDL(2)); err != nil {
		t.Fatal(err)
	}
	var version int64
	var layouts string
	if err := d.Pool.QueryRow(ctx, "SELECT schema_version, layouts FROM sync_schema_meta").Scan(&version, &layouts); err != nil {
		t.Fatal(err)
	}
	want := `{"todos":[{"name":"id","type":"string","nullable":false},{"name":"title","type":"string","nullable":false},{"name":"owner_id","type":"string","nullable":true}]}`
	if version != 2 || layouts != want {
		t.Fatalf("marker = %d %s\nwant 2 %s", version, layouts, want)
	}
	cp, err := s.Checkpoint(ctx, "p1", "todos_by_owner")
	if err != nil || cp.State != gosync.StateDeclared || cp.SchemaVersion != 2 {
		t.Fatalf("declared checkpoint = %+v, %v", cp, err)
	}
	if f := fenceOf(t, d.Pool, "p1"); f != 2 {
		t.Fatalf("fence = %d, want 2", f)
	}
	// The DDL ran: the new column exists.
	mustExec(t, d.Pool, "INSERT INTO todos (id, title, owner_id) VALUES ('t1', 'x', 'u1')")
	// An old writer is fenced out now; a writer at the new version is not.
	if _, err := oldWriterCommit(ctx, d.Pool, "p1", nil); !errors.Is(err, gosync.ErrWriterFenceRejected) {
		t.Fatalf("NULL writer after the bump: %v", err)
	}
	if _, err := oldWriterCommit(ctx, d.Pool, "p1", v(1)); !errors.Is(err, gosync.ErrWriterFenceRejected) {
		t.Fatalf("v1 writer after the bump: %v", err)
	}
	if _, err := oldWriterCommit(ctx, d.Pool, "p1", v(2)); err != nil {
		t.Fatalf("v2 writer after the bump: %v", err)
	}
}

func TestEnsureSchemaRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	s := gosync.New(d.Pool)
	if err := s.EnsureSchema(ctx, todosSchema(2), []gosync.CheckpointDeclaration{todosByOwner}, todosDDL(2)); err != nil {
		t.Fatal(err)
	}

	check := func(name string, err, kind error, mentions ...string) {
		t.Helper()
		if !errors.Is(err, kind) {
			t.Errorf("%s: err = %v, want %v", name, err, kind)
			return
		}
		for _, m := range mentions {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("%s: %q does not mention %q", name, err, m)
			}
		}
	}

	// An undeclared incomplete checkpoint at this version; an empty
	// declaration set declares nothing.
	check("undeclared checkpoint", s.EnsureSchema(ctx, todosSchema(2), nil, nil), gosync.ErrCheckpointIncomplete, "todos_by_owner", `"p1"`)
	check("other declaration", s.EnsureSchema(ctx, todosSchema(2), []gosync.CheckpointDeclaration{{Partition: "p1", Name: "else", SchemaVersion: 2}}, nil),
		gosync.ErrCheckpointIncomplete, "todos_by_owner")
	decl := []gosync.CheckpointDeclaration{todosByOwner}
	if err := s.EnsureSchema(ctx, todosSchema(2), decl, nil); err != nil {
		t.Fatalf("declared: %v", err)
	}

	check("older server", s.EnsureSchema(ctx, todosSchema(1), decl, nil), gosync.ErrSchemaTooNew,
		"stored schema version 2 is newer than the configured schema (1)")

	wrongType := todosSchema(2)
	wrongType.Tables[0].Columns[1].Type = gosync.TypeJSON
	check("column type differs", s.EnsureSchema(ctx, wrongType, decl, nil), gosync.ErrSchemaMismatch, `table "todos" column "title"`)
	wrongNull := todosSchema(2)
	wrongNull.Tables[0].Columns[2].Nullable = false
	check("nullability differs", s.EnsureSchema(ctx, wrongNull, decl, nil), gosync.ErrSchemaMismatch, `table "todos" column "owner_id"`)
	extraCol := todosSchema(2)
	extraCol.Tables[0].Columns = append(extraCol.Tables[0].Columns, gosync.Column{Name: "due", Type: gosync.TypeInteger})
	check("extra column", s.EnsureSchema(ctx, extraCol, decl, nil), gosync.ErrSchemaMismatch, `table "todos" column "due"`)
	extraTable := todosSchema(2)
	extraTable.Tables = append(extraTable.Tables, gosync.Table{Name: "lists", Columns: []gosync.Column{{Name: "id", Type: gosync.TypeString}}})
	check("extra table", s.EnsureSchema(ctx, extraTable, decl, nil), gosync.ErrSchemaMismatch, `table "lists"`)

	// Same layouts, but the physical table lost a column.
	mustExec(t, d.Pool, "ALTER TABLE todos DROP COLUMN owner_id")
	check("physical column missing", s.EnsureSchema(ctx, todosSchema(2), decl, nil), gosync.ErrSchemaMismatch, `table "todos" column "owner_id" is missing`)
	mustExec(t, d.Pool, "DROP TABLE todos")
	check("physical table missing", s.EnsureSchema(ctx, todosSchema(2), decl, nil), gosync.ErrSchemaMismatch, `table "todos" does not exist`)

	// Invalid schemas never reach the database.
	for name, bad := range map[string]gosync.Schema{
		"version 0":        {Version: 0, Tables: todosSchema(1).Tables},
		"duplicate table":  {Version: 3, Tables: append(todosSchema(1).Tables, todosSchema(1).Tables...)},
		"duplicate column": {Version: 3, Tables: []gosync.Table{{Name: "t", Columns: []gosync.Column{{Name: "a", Type: gosync.TypeString}, {Name: "a", Type: gosync.TypeString}}}}},
		"unknown type":     {Version: 3, Tables: []gosync.Table{{Name: "t", Columns: []gosync.Column{{Name: "a", Type: "varchar(9"}}}}},
	} {
		check(name, s.EnsureSchema(ctx, bad, nil, nil), gosync.ErrInvalidSchema)
	}
	if version := schemaVersion(t, d.Pool); version != 2 {
		t.Fatalf("refusals changed the marker: %d", version)
	}
}

// TestEnsureSchemaFollowsSearchPath: the physical check resolves tables as
// unqualified queries do, through the whole search_path, so a table in a
// later schema of the path is found.
func TestEnsureSchemaFollowsSearchPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	s := gosync.New(d.Pool)
	schema := gosync.Schema{Version: 1, Tables: []gosync.Table{{Name: "notes", Columns: []gosync.Column{{Name: "id", Type: gosync.TypeString}}}}}
	if err := s.EnsureSchema(ctx, schema, nil, nil); err != nil {
		t.Fatal(err)
	}
	mustExec(t, d.Pool, "CREATE SCHEMA app; CREATE TABLE app.notes (id text)")
	if err := s.EnsureSchema(ctx, schema, nil, nil); !errors.Is(err, gosync.ErrSchemaMismatch) {
		t.Fatalf("notes off the search_path: %v, want ErrSchemaMismatch", err)
	}
	conn := d.Conn(t)
	mustExec(t, conn, "CREATE SCHEMA empty_first; SET search_path = empty_first, public, app")
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		return gosync.New(d.Pool).WithTx(tx).EnsureSchema(ctx, schema, nil, nil)
	})
	if err != nil {
		t.Fatalf("notes in a later schema of the search_path: %v", err)
	}
}

func TestEnsureReadyPhases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	s := gosync.New(d.Pool)
	phase := func(err error) gosync.ReadinessPhase {
		t.Helper()
		var re *gosync.ReadinessError
		if !errors.As(err, &re) || !errors.Is(err, gosync.ErrSchemaNotReady) || re.Code() != "sync.schema_not_ready" {
			t.Fatalf("err = %v, want a *ReadinessError with code sync.schema_not_ready", err)
		}
		return re.Phase
	}

	bad := gosync.ReadyConfig{Schema: gosync.Schema{Version: 0}}
	if p := phase(s.EnsureReady(ctx, bad)); p != gosync.PhaseSchemaCompile {
		t.Fatalf("invalid schema: phase %s", p)
	}
	ok := gosync.ReadyConfig{Schema: todosSchema(2), Declarations: []gosync.CheckpointDeclaration{todosByOwner}, Options: todosDDL(2)}
	if err := s.EnsureReady(ctx, ok); err != nil {
		t.Fatal(err)
	}
	undeclared := gosync.ReadyConfig{Schema: todosSchema(2)}
	err := s.EnsureReady(ctx, undeclared)
	if p := phase(err); p != gosync.PhaseBackfillCheckpoint || !errors.Is(err, gosync.ErrCheckpointIncomplete) {
		t.Fatalf("undeclared checkpoint: phase %s, %v", p, err)
	}
	old := gosync.ReadyConfig{Schema: todosSchema(1), Declarations: ok.Declarations}
	err = s.EnsureReady(ctx, old)
	if p := phase(err); p != gosync.PhaseStorageMigration || !errors.Is(err, gosync.ErrSchemaTooNew) {
		t.Fatalf("older server: phase %s, %v", p, err)
	}
	var re *gosync.ReadinessError
	if errors.As(err, &re); re.SchemaVersion != 1 {
		t.Fatalf("readiness schema version = %d, want 1", re.SchemaVersion)
	}
}
