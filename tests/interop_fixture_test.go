package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gosync/gosync/gosync"
)

// fixtureBlobRef is the one blob_ref the fixture's pushes carry, as stored.
const fixtureBlobRef = `{"blobId":"sha256:8d08ad6d0b03a48d347b3e84b5fecb01e1e1735ce78c24ef8684f02cc2696606","byteLength":24,"mediaType":"text/plain","name":"a.txt"}`

// fixtureBumpPoint is each partition's last commit_seq written under v1
// (fixture-upstream-db.md, Partitions): upstream 0.15.48 stamps no
// writer_version, so the commit position is what tells a v1 payload from a
// v2 one.
var fixtureBumpPoint = map[string]int64{"acme": 9, "globex": 6, "initech": 4}

// fixtureDecoded is fixture-upstream-db.md's "Log payloads decoded" table,
// keyed partition/seq/idx; a delete is absent.
func fixtureDecoded() map[string][]any {
	var null any
	nan, negZero := math.Float64frombits(0x7ff8000000000000), math.Copysign(0, -1) // the canonical NaN upstream writes
	return map[string][]any{
		"acme/1/0":    {"p1", "o1", "Apollo", 1000.5, `{"tier":"gold","n":1}`, false, []byte{0x89, 0x50, 0x4e, 0x47}, []byte{0x0a}},
		"acme/1/1":    {"t1", "o1", "p1", "Design", false, int64(1), `["ux"]`, null},
		"acme/1/2":    {"t2", "o1", "p1", "Build", false, int64(2), null, null},
		"acme/2/0":    {"p2", "o2", "Borealis", null, null, false, null, null},
		"acme/2/1":    {"t3", "o2", "p2", "Plan", false, null, `{"due":"2026-02-01"}`, null},
		"acme/3/0":    {"t1", "o1", "p1", "Design v2", true, int64(3), `["ux"]`, null},
		"acme/4/0":    {"p1", "o1", "Apollo", 1250.25, `{"tier":"platinum"}`, false, []byte{0x89, 0x50, 0x4e, 0x47}, []byte{0x0a, 0x0b}},
		"acme/5/0":    {"t4", "o1", "p1", "Test", false, int64(9007199254740991), `[]`, fixtureBlobRef},
		"acme/7/0":    {"t3", "o2", "p2", "Plan (moved?)", false, int64(4), `{"due":"2026-02-01"}`, null},
		"acme/8/0":    {"t5", "o1", "p1", "Unicode ✓ 日本語 🎉", false, int64(-42), `{"a": {"b": [1, 2, 3]}}`, null},
		"acme/8/1":    {"p2", "o2", "Borealis", null, null, true, null, null},
		"acme/10/0":   {"t1", "o1", "p1", "Design v2", true, int64(3), `["ux"]`, null, "alice"},
		"acme/11/0":   {"t6", "o1", "p1", "After bump", false, null, null, null, null},
		"acme/12/0":   {"p1", "o1", "Apollo II", 1250.25, `{"tier":"platinum"}`, false, []byte{0x89, 0x50, 0x4e, 0x47}, null},
		"globex/1/0":  {"p1", "g1", "Gadget", nan, `{"x" : [true, false]}`, false, []byte{}, []byte{}},
		"globex/1/1":  {"t1", "g1", "p1", "Globex task", false, int64(0), `null`, null},
		"globex/2/0":  {"t2", "g1", "p1", "", true, null, null, null},
		"globex/3/0":  {"t1", "g1", "p1", "Globex task", true, int64(7), `null`, null},
		"globex/5/0":  {"t2", "g1", "p1", "Reborn", false, null, null, fixtureBlobRef},
		"globex/6/0":  {"p1", "g1", "Gadget", math.Inf(-1), `{"x" : [true, false]}`, false, []byte{0x00, 0xff}, null},
		"globex/7/0":  {"t2", "g1", "p1", "Reborn", false, null, null, fixtureBlobRef, "bob"},
		"initech/1/0": {"p10", "i1", "Initrode", 0.1, `{}`, false, null, null},
		"initech/1/1": {"p11", "i2", "Swingline", negZero, null, false, null, []byte{0x01}},
		"initech/1/2": {"t10", "i1", "p10", "TPS report", false, int64(1), null, null},
		"initech/1/3": {"t11", "i2", "p11", "Stapler", false, null, null, null},
		"initech/2/0": {"t10", "i1", "p10", "TPS report (cover sheet)", false, int64(1), null, null},
		"initech/3/0": {"t10", "i1", "p10", "TPS report (cover sheet)", true, int64(2), `["done"]`, null},
		"initech/5/0": {"t12", "i1", "p10", "New hire", false, int64(5), `{"k":"v"}`, null, "carol"},
	}
}

// sameValues: decoded row values equal, floats by bit pattern (NaN, -0).
func sameValues(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		fa, okA := a[i].(float64)
		fb, okB := b[i].(float64)
		if okA || okB {
			if !okA || !okB || math.Float64bits(fa) != math.Float64bits(fb) {
				return false
			}
			continue
		}
		if !reflect.DeepEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}

// fixtureScopeColumns are the columns upstream keeps on an update (a scope
// column never moves: push 7's move of acme t3 kept o2/p2).
var fixtureScopeColumns = map[string][]int{"projects": {1}, "tasks": {1, 2}}

type fixtureChange struct {
	partition, tbl, rowID string
	seq                   int64
	idx                   int
	op                    int16
	version               *int64
	scopes                string
	payload               []byte
	writerVersion         *int64
	sqlChange, sqlLogged  *string // sync_decode_change, sync_decode_logged(tbl, writer_version, payload)
	sqlAtPosition         *string // sync_decode_logged(tbl, <version by commit position>, payload)
}

type fixtureRow struct {
	values  []any
	version int64
	scopes  string
}

// TestInteropUpstreamFixture: on the database upstream 0.15.48 built and
// bumped v1 → v2 before gosync came (fixture-upstream-db.md), gosync adopts
// it, records v1's layouts, and decodes every logged change in Go and in
// SQL (as a reader) to the values upstream decoded; the log, replayed the
// way upstream applies it, gives exactly the rows upstream materialized
// (payload, columns, version, scopes); then a bump from Go writes the
// marker upstream would write and re-encodes the tasks rows as upstream's
// bump does (projects, scopes, versions and the log untouched), and the
// layouts of v1, v2 and v3 are all recorded.
func TestInteropUpstreamFixture(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := loadFixture(t)
	v2 := fixtureSchema()
	_, v2Text := marker(t, d)
	if v2Text != v2.Layouts() {
		t.Fatalf("fixture marker %s, want %s", v2Text, v2.Layouts())
	}
	// v1's text is v2's without the appended column (schema-bump.md).
	v1Text := strings.Replace(v2Text, `,{"name":"assignee","type":"string","nullable":true}`, "", 1)
	v1 := fixtureSchema()
	v1.Version = 1
	v1.Tables[1].Columns = fixtureTasksV1()
	if v1Text == v2Text || v1Text != v1.Layouts() {
		t.Fatalf("v1 layouts %s, want %s", v1Text, v1.Layouts())
	}
	layoutOf := map[int64]map[string][]gosync.Column{}
	for _, sc := range []gosync.Schema{v1, v2} {
		layoutOf[sc.Version] = map[string][]gosync.Column{}
		for _, tb := range sc.Tables {
			layoutOf[sc.Version][tb.Name] = tb.Columns
		}
	}

	// Before v1 is recorded only v2's layouts are (00024 seeded the marker):
	// a v1 tasks payload decodes under none.
	if got := recordedLayouts(t, d.Pool); len(got) != 1 || got[2] != v2Text {
		t.Fatalf("layouts recorded on adoption: %v, want only v2's", got)
	}
	reader := loginAs(t, d, "sync_reader", nil)
	if _, err := reader.Exec(ctx, "SELECT sync_decode_change('acme', 1, 1)"); sqlState(err) != "22023" {
		t.Fatalf("a v1 payload with only v2 recorded: %v, want 22023", err)
	}
	admin := loginAs(t, d, "sync_admin", nil)
	mustExec(t, admin, "SELECT sync_record_schema_layouts(1, $1)", v1Text)
	if got := recordedLayouts(t, d.Pool); len(got) != 2 || got[1] != v1Text || got[2] != v2Text {
		t.Fatalf("layouts recorded: %v, want v1's and v2's", got)
	}

	// Every change, decoded in SQL by a reader three ways.
	rows, err := reader.Query(ctx, `SELECT c.partition, c.commit_seq, c.idx, c.tbl, c.row_id, c.op, c.row_version, c.scopes::text,
			c.payload, k.writer_version, sync_decode_change(c.partition, c.commit_seq, c.idx)::text,
			sync_decode_logged(c.tbl, k.writer_version, c.payload)::text,
			sync_decode_logged(c.tbl, CASE WHEN c.commit_seq <= (jsonb_object_field_text($1::jsonb, c.partition))::bigint THEN 1 ELSE 2 END, c.payload)::text
		FROM sync_changes c JOIN sync_commits k USING (partition, commit_seq)
		ORDER BY c.partition, c.commit_seq, c.idx`, mustJSON(t, fixtureBumpPoint))
	if err != nil {
		t.Fatal(err)
	}
	changes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (c fixtureChange, err error) {
		err = r.Scan(&c.partition, &c.seq, &c.idx, &c.tbl, &c.rowID, &c.op, &c.version, &c.scopes, &c.payload,
			&c.writerVersion, &c.sqlChange, &c.sqlLogged, &c.sqlAtPosition)
		return c, err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 34 {
		t.Fatalf("%d logged changes, want the fixture's 34", len(changes))
	}

	want := fixtureDecoded()
	state := map[string]*fixtureRow{}
	decodedKeys := 0
	for _, c := range changes {
		key := fmt.Sprintf("%s/%d/%d", c.partition, c.seq, c.idx)
		if c.writerVersion != nil {
			t.Errorf("%s: writer_version %d, but upstream 0.15.48 stamps none", key, *c.writerVersion)
		}
		rowKey := c.partition + "/" + c.tbl + "/" + c.rowID
		if c.op == 2 {
			if c.payload != nil || c.sqlChange != nil || c.sqlLogged != nil || c.sqlAtPosition != nil || want[key] != nil {
				t.Errorf("%s: a delete decodes to %v %v %v", key, c.sqlChange, c.sqlLogged, c.sqlAtPosition)
			}
			if state[rowKey] == nil {
				t.Errorf("%s: deletes %s, which is not there", key, rowKey)
			}
			delete(state, rowKey)
			continue
		}
		// Go: the layout of the version the commit position says.
		version := int64(2)
		if c.seq <= fixtureBumpPoint[c.partition] {
			version = 1
		}
		cols := layoutOf[version][c.tbl]
		got, err := gosync.DecodeRow(cols, c.payload)
		if err != nil {
			t.Errorf("%s: DecodeRow with v%d's %s layout: %v", key, version, c.tbl, err)
			continue
		}
		decodedKeys++
		if !sameValues(got, want[key]) {
			t.Errorf("%s: Go decoded %#v\nwant %#v", key, got, want[key])
		}
		// The other version's layout refuses it: the newest layout that
		// decodes (sync_decode_logged's rule for no writer_version) is its own.
		if other := layoutOf[3-version][c.tbl]; len(other) != len(cols) {
			if _, err := gosync.DecodeRow(other, c.payload); !errors.Is(err, gosync.ErrInvalidPayload) {
				t.Errorf("%s: a v%d payload decodes under v%d's layout too (%v)", key, version, 3-version, err)
			}
		}
		for what, sqlText := range map[string]*string{"sync_decode_change": c.sqlChange, "sync_decode_logged(NULL writer_version)": c.sqlLogged,
			fmt.Sprintf("sync_decode_logged(writer_version %d)", version): c.sqlAtPosition} {
			if sqlText == nil {
				t.Errorf("%s: %s is NULL", key, what)
			} else if why := sqlAgrees(cols, got, *sqlText); why != "" {
				t.Errorf("%s: %s = %s disagrees with Go: %s", key, what, *sqlText, why)
			}
		}
		// Replay: upsert; on an update the scope columns keep the stored
		// values, and the row's values pad to the current layout.
		values := append(got[:len(got):len(got)], make([]any, len(layoutOf[2][c.tbl])-len(got))...)
		if old := state[rowKey]; old != nil {
			for _, i := range fixtureScopeColumns[c.tbl] {
				if !reflect.DeepEqual(values[i], old.values[i]) {
					t.Errorf("%s: the log's scope column %s moved %v → %v: upstream keeps it", key, cols[i].Name, old.values[i], values[i])
				}
				values[i] = old.values[i]
			}
		}
		if c.version == nil {
			t.Fatalf("%s: an upsert without row_version", key)
		}
		state[rowKey] = &fixtureRow{values: values, version: *c.version, scopes: c.scopes}
	}
	if decodedKeys != len(want) {
		t.Errorf("%d upserts decoded, the fixture lists %d", decodedKeys, len(want))
	}

	// The replayed rows are upstream's current rows.
	materialized := map[string]bool{}
	for _, tb := range v2.Tables {
		var sel []string
		for _, c := range tb.Columns {
			col := pgx.Identifier{c.Name}.Sanitize()
			if c.Type == gosync.TypeJSON {
				col += "::text"
			}
			sel = append(sel, col)
		}
		rows, err := d.Pool.Query(ctx, "SELECT _sync_partition, _sync_row_id, _sync_server_version, _sync_scopes::text, _sync_payload, "+
			strings.Join(sel, ", ")+" FROM "+pgx.Identifier{tb.Name}.Sanitize())
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			rowKey := vals[0].(string) + "/" + tb.Name + "/" + vals[1].(string)
			materialized[rowKey] = true
			r := state[rowKey]
			if r == nil {
				t.Errorf("%s is materialized, but the log leaves no such row", rowKey)
				continue
			}
			if vals[2].(int64) != r.version || vals[3].(string) != r.scopes {
				t.Errorf("%s: server version %v scopes %v, the log's last upsert has %d %s", rowKey, vals[2], vals[3], r.version, r.scopes)
			}
			payload, err := gosync.EncodeRow(tb.Columns, r.values)
			if err != nil {
				t.Errorf("%s: EncodeRow: %v", rowKey, err)
			} else if !bytes.Equal(payload, vals[4].([]byte)) {
				t.Errorf("%s: re-encoded with v2's layout %x, _sync_payload %x", rowKey, payload, vals[4])
			}
			for i, c := range tb.Columns {
				col := vals[5+i]
				if c.Type == gosync.TypeJSON && col != nil && r.values[i] != nil {
					var a, b any
					if json.Unmarshal([]byte(col.(string)), &a) != nil || json.Unmarshal([]byte(r.values[i].(string)), &b) != nil || !reflect.DeepEqual(a, b) {
						t.Errorf("%s.%s: materialized %s, decoded %s", rowKey, c.Name, col, r.values[i])
					}
					continue
				}
				if !sameValues([]any{col}, []any{r.values[i]}) {
					t.Errorf("%s.%s: materialized %#v, decoded %#v", rowKey, c.Name, col, r.values[i])
				}
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	var missing []string
	for k := range state {
		if !materialized[k] {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 || len(materialized) != 11 {
		t.Errorf("%d rows materialized (want the fixture's 11); the log leaves these unmaterialized: %v", len(materialized), missing)
	}

	// A bump from Go: v3 appends a nullable column, as upstream's bump rule
	// allows; the marker is upstream's text for v3 (JSON.stringify, compact,
	// declaration order): the stored v2 text with the column appended.
	payloadsBefore := map[string]map[string][]byte{"tasks": appPayloads(t, d.Pool, "tasks"), "projects": appPayloads(t, d.Pool, "projects")}
	untouched, _ := bumpUntouched(t, d.Pool)
	v3 := fixtureSchema()
	v3.Version = 3
	v3.Tables[1].Columns = append(v3.Tables[1].Columns, gosync.Column{Name: "due", Type: gosync.TypeString, Nullable: true})
	if err := s.EnsureSchema(ctx, v3, nil, &gosync.SchemaChangeOptions{DDL: func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "ALTER TABLE tasks ADD COLUMN due text")
		return err
	}}); err != nil {
		t.Fatalf("bump to v3 from Go: %v", err)
	}
	v3Text := strings.Replace(v2Text, `{"name":"assignee","type":"string","nullable":true}]`,
		`{"name":"assignee","type":"string","nullable":true},{"name":"due","type":"string","nullable":true}]`, 1)
	if version, text := marker(t, d); version != 3 || text != v3Text || v3Text == v2Text {
		t.Fatalf("marker after the bump: %d %s\nupstream writes 3 %s", version, text, v3Text)
	}
	if got := recordedLayouts(t, d.Pool); len(got) != 3 || got[1] != v1Text || got[2] != v2Text || got[3] != v3Text {
		t.Fatalf("layouts recorded after the bump: %v, want v1's, v2's and v3's", got)
	}
	// The bump re-encoded each tasks row as upstream's does: v2's values
	// plus NULL under v3's layout (same server version, scopes, columns);
	// projects gained nothing and keeps its bytes; the log keeps its own.
	tasksAfter := appPayloads(t, d.Pool, "tasks")
	if len(tasksAfter) != len(payloadsBefore["tasks"]) || len(tasksAfter) == 0 {
		t.Fatalf("tasks rows after the bump: %d, before: %d", len(tasksAfter), len(payloadsBefore["tasks"]))
	}
	for key, before := range payloadsBefore["tasks"] {
		old, err := gosync.DecodeRow(v2.Tables[1].Columns, before)
		if err != nil {
			t.Fatalf("tasks %s before the bump: %v", key, err)
		}
		got, err := gosync.DecodeRow(v3.Tables[1].Columns, tasksAfter[key])
		if err != nil {
			t.Errorf("tasks %s after the bump does not decode with v3's layout: %v (%x)", key, err, tasksAfter[key])
		} else if !sameValues(got, append(old, nil)) {
			t.Errorf("tasks %s after the bump decodes to %#v, want v2's %#v plus NULL", key, got, old)
		}
	}
	if got := appPayloads(t, d.Pool, "projects"); !reflect.DeepEqual(got, payloadsBefore["projects"]) {
		t.Errorf("projects payloads changed by the bump: %x\nbefore %x", got, payloadsBefore["projects"])
	}
	if got, logged := bumpUntouched(t, d.Pool); got != untouched || logged != 34 {
		t.Errorf("the bump changed server versions, scopes, sync_row_scopes or the log (%d changes):\n%s\nbefore:\n%s", logged, got, untouched)
	}
	// The log still decodes: a pre-bump tasks change under v1's layout.
	if got := queryOne[string](t, reader, "SELECT sync_decode_change('acme', 1, 1)->>'title'"); got != "Design" {
		t.Fatalf("acme 1/1 after the bump decodes title %q", got)
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// appPayloads is a table's _sync_payload per partition/row id.
func appPayloads(t testing.TB, q *pgxpool.Pool, tbl string) map[string][]byte {
	t.Helper()
	rows, err := q.Query(context.Background(), "SELECT _sync_partition || '/' || _sync_row_id, _sync_payload FROM "+pgx.Identifier{tbl}.Sanitize())
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	var key string
	var payload []byte
	if _, err := pgx.ForEachRow(rows, []any{&key, &payload}, func() error {
		m[key] = append([]byte(nil), payload...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return m
}

// bumpUntouched is what a bump leaves alone: every app row's server version
// and scopes, sync_row_scopes, and the log's payloads.
func bumpUntouched(t testing.TB, q *pgxpool.Pool) (state string, logged int) {
	t.Helper()
	err := q.QueryRow(context.Background(), `SELECT concat_ws(E'\n',
		(SELECT string_agg(format('tasks %s/%s %s %s', _sync_partition, _sync_row_id, _sync_server_version, _sync_scopes), ',' ORDER BY _sync_partition, _sync_row_id) FROM tasks),
		(SELECT string_agg(format('projects %s/%s %s %s', _sync_partition, _sync_row_id, _sync_server_version, _sync_scopes), ',' ORDER BY _sync_partition, _sync_row_id) FROM projects),
		(SELECT string_agg(format('%s', r), ',' ORDER BY format('%s', r)) FROM sync_row_scopes r),
		(SELECT string_agg(format('%s/%s/%s %s', partition, commit_seq, idx, encode(payload, 'hex')), ',' ORDER BY partition, commit_seq, idx) FROM sync_changes)),
		(SELECT count(*) FROM sync_changes)`).Scan(&state, &logged)
	if err != nil {
		t.Fatal(err)
	}
	return state, logged
}
