package tests

// The row codec in SQL (sync_decode_row, migration 00024) against
// upstream's vectors and against gosync.DecodeRow, and the layouts of every
// version (sync_schema_layouts) that a backfill decodes the log with.

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/gosync/gosync/gosync"
	"github.com/gosync/gosync/internal/pgtest"
)

// codecVector is one element of upstream's row-codec-vectors.json.
type codecVector struct {
	Name       string          `json:"name"`
	Columns    []gosync.Column `json:"columns"`
	Hex        string          `json:"hex"`
	DecodeOnly bool            `json:"decode_only"`
	Error      *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func loadCodecVectors(t testing.TB) []codecVector {
	t.Helper()
	b, err := os.ReadFile("../gosync/testdata/row-codec-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vs []codecVector
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatal(err)
	}
	return vs
}

// columnsJSON is a layout's column list as sync_decode_row takes it.
func columnsJSON(t testing.TB, cols []gosync.Column) string {
	t.Helper()
	if cols == nil {
		cols = []gosync.Column{}
	}
	b, err := json.Marshal(cols)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sqlAgrees says why sync_decode_row's jsonb (as text) is not the SQL
// shape of Go's decoded values ("" when it is): NULL is an absent key,
// floats that JSON numbers do not carry are strings, bytes are "\x<hex>",
// json is the parsed document.
func sqlAgrees(cols []gosync.Column, values []any, sqlText string) string {
	dec := json.NewDecoder(strings.NewReader(sqlText))
	dec.UseNumber()
	var got map[string]any
	if err := dec.Decode(&got); err != nil {
		return fmt.Sprintf("not a JSON object: %v", err)
	}
	present := 0
	for i, c := range cols {
		g, ok := got[c.Name]
		if values[i] == nil {
			if ok {
				return fmt.Sprintf("column %s: NULL is %v, want an absent key", c.Name, g)
			}
			continue
		}
		present++
		if !ok {
			return fmt.Sprintf("column %s: absent, want %v", c.Name, values[i])
		}
		switch v := values[i].(type) {
		case string:
			if c.Type == gosync.TypeJSON {
				if !sameJSON(v, g) {
					return fmt.Sprintf("column %s: %v, want the document %s", c.Name, g, v)
				}
			} else if g != v {
				return fmt.Sprintf("column %s: %q, want %q", c.Name, g, v)
			}
		case int64:
			if n, _ := g.(json.Number); string(n) != strconv.FormatInt(v, 10) {
				return fmt.Sprintf("column %s: %v, want %d", c.Name, g, v)
			}
		case bool:
			if g != v {
				return fmt.Sprintf("column %s: %v, want %v", c.Name, g, v)
			}
		case []byte:
			if g != `\x`+hex.EncodeToString(v) {
				return fmt.Sprintf("column %s: %v, want \\x%x", c.Name, g, v)
			}
		case float64:
			var want any = json.Number("")
			switch {
			case math.IsNaN(v):
				want = "NaN"
			case math.IsInf(v, 1):
				want = "Infinity"
			case math.IsInf(v, -1):
				want = "-Infinity"
			case v == 0 && math.Signbit(v):
				want = "-0"
			}
			if s, isString := want.(string); isString {
				if g != s {
					return fmt.Sprintf("column %s: %v, want %q", c.Name, g, s)
				}
				continue
			}
			n, _ := g.(json.Number)
			f, err := strconv.ParseFloat(string(n), 64)
			if err != nil || math.Float64bits(f) != math.Float64bits(v) {
				return fmt.Sprintf("column %s: %v, want %v", c.Name, g, v)
			}
		default:
			return fmt.Sprintf("column %s: Go value %T", c.Name, v)
		}
	}
	if len(got) != present {
		return fmt.Sprintf("%d keys for %d non-NULL columns", len(got), present)
	}
	return ""
}

// sameJSON: the document text and jsonb's rendering are one value (numbers
// compared exactly, the last of duplicate keys, as both parsers keep).
func sameJSON(doc string, got any) bool {
	norm := func(v any) string {
		var walk func(any) any
		walk = func(v any) any {
			switch x := v.(type) {
			case map[string]any:
				for k, e := range x {
					x[k] = walk(e)
				}
			case []any:
				for i, e := range x {
					x[i] = walk(e)
				}
			case json.Number:
				r, ok := new(big.Rat).SetString(string(x))
				if !ok {
					return "bad number " + string(x)
				}
				return "n:" + r.RatString()
			}
			return v
		}
		b, _ := json.Marshal(walk(v))
		return string(b)
	}
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	var want any
	if err := dec.Decode(&want); err != nil {
		return false
	}
	return norm(want) == norm(got)
}

// TestSQLDecodeRowVectors: sync_decode_row decodes every valid and
// decode-only vector to the values gosync.DecodeRow finds, and refuses every
// invalid one with 22023 naming the column (when upstream's reason is about
// one) and the byte, in upstream's words. The one exception is a string
// holding U+0000, which Postgres text cannot hold: refused by name.
func TestSQLDecodeRowVectors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	reader := loginAs(t, d, "sync_reader", nil)
	var decoded, refused int
	for _, v := range loadCodecVectors(t) {
		payload, _ := hex.DecodeString(v.Hex)
		var out string
		err := reader.QueryRow(ctx, "SELECT sync_decode_row($1, $2)::text", payload, columnsJSON(t, v.Columns)).Scan(&out)
		values, goErr := gosync.DecodeRow(v.Columns, payload)
		if v.Error != nil {
			refused++
			if goErr == nil {
				t.Errorf("%s: Go decodes an invalid vector", v.Name)
			}
			want := strings.Replace(v.Error.Message, "json column j ", "json column ", 1)
			want = strings.TrimSuffix(strings.Replace(want, "non-nullable column "+lastWord(want), "non-nullable column", 1), " ")
			wantSQLState(t, v.Name, err, "22023", "sync_decode_row: ", "at byte ", want)
			var de *gosync.RowDecodeError
			if errors.As(goErr, &de) && de.Column != "" && !strings.Contains(errMessage(err), "column "+de.Column+" at byte "+strconv.Itoa(de.Offset)+":") {
				t.Errorf("%s: SQL %q, Go names column %s at byte %d", v.Name, errMessage(err), de.Column, de.Offset)
			}
			continue
		}
		if goErr != nil {
			t.Fatalf("%s: Go: %v", v.Name, goErr)
		}
		if v.Name == "string-nul-char" {
			wantSQLState(t, v.Name, err, "22023", "U+0000")
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", v.Name, err)
			continue
		}
		decoded++
		if why := sqlAgrees(v.Columns, values, out); why != "" {
			t.Errorf("%s: %s (SQL %s)", v.Name, why, out)
		}
	}
	if decoded != 92 || refused != 50 {
		t.Fatalf("%d decoded, %d refused; want 92 and 50", decoded, refused)
	}
}

func lastWord(s string) string { return s[strings.LastIndex(s, " ")+1:] }

func errMessage(err error) string {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		return pg.Message
	}
	return fmt.Sprint(err)
}

// randomRow is a column list and a payload: an encoding of random values,
// sometimes damaged (a byte changed, cut or added).
func randomRow(r *rand.Rand, texts []string) ([]gosync.Column, []byte) {
	types := []string{gosync.TypeString, gosync.TypeInteger, gosync.TypeFloat, gosync.TypeBoolean,
		gosync.TypeJSON, gosync.TypeBytes, gosync.TypeBlobRef, gosync.TypeCRDT}
	cols := make([]gosync.Column, r.Intn(11))
	values := make([]any, len(cols))
	for i := range cols {
		cols[i] = gosync.Column{Name: fmt.Sprintf("c%d", i), Type: types[r.Intn(len(types))], Nullable: r.Intn(2) == 0}
		if cols[i].Nullable && r.Intn(3) == 0 {
			continue
		}
		switch cols[i].Type {
		case gosync.TypeString:
			values[i] = []string{"", "x", "héllo wörld", "世界", "🎉", "\ufeffx", "x\ufeffy", "a\\b\"c", strings.Repeat("y", 300)}[r.Intn(9)]
		case gosync.TypeInteger:
			values[i] = r.Int63n(1<<54) - 1<<53
			if n := values[i].(int64); n > 1<<53-1 || n < -(1<<53-1) {
				values[i] = int64(0)
			}
		case gosync.TypeFloat:
			values[i] = []float64{0, math.Copysign(0, -1), 1.5, 0.1, -2.25, 1e308, 5e-324, math.NaN(), math.Inf(1), math.Inf(-1), r.NormFloat64() * 1e6,
				math.Float64frombits(r.Uint64())}[r.Intn(12)]
		case gosync.TypeBoolean:
			values[i] = r.Intn(2) == 0
		case gosync.TypeBytes, gosync.TypeCRDT:
			b := make([]byte, r.Intn(40))
			r.Read(b)
			values[i] = b
		case gosync.TypeJSON, gosync.TypeBlobRef:
			values[i] = texts[r.Intn(len(texts))]
		}
	}
	// Values the encoder refuses (a json text in a blob_ref column) leave
	// the column NULL or change its type to json.
	payload, err := gosync.EncodeRow(cols, values)
	for i := 0; err != nil && i < len(cols); i++ {
		if cols[i].Type == gosync.TypeBlobRef {
			cols[i].Type = gosync.TypeJSON
		}
		payload, err = gosync.EncodeRow(cols, values)
	}
	if err != nil {
		payload = []byte{}
	}
	switch r.Intn(4) {
	case 0:
		if len(payload) > 0 {
			payload[r.Intn(len(payload))] ^= byte(1 << r.Intn(8))
		}
	case 1:
		if len(payload) > 0 {
			payload = payload[:r.Intn(len(payload))]
		}
	case 2:
		payload = append(payload, byte(r.Intn(256)))
	}
	return cols, payload
}

// TestSQLDecodeRowAgreesWithGo: on thousands of random rows, intact and
// damaged, sync_decode_row (refuse => false: NULL for a refusal) accepts exactly
// what gosync.DecodeRow accepts, with the same values, but for what
// Postgres cannot hold (a U+0000 in text, \u0000 in jsonb), refused by name.
func TestSQLDecodeRowAgreesWithGo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	var texts []string
	for _, v := range loadCodecVectors(t) {
		if len(v.Columns) == 1 && (v.Columns[0].Type == gosync.TypeJSON || v.Columns[0].Type == gosync.TypeBlobRef) && len(v.Hex) > 10 {
			b, _ := hex.DecodeString(v.Hex[10:])
			texts = append(texts, string(b))
		}
	}
	r := rand.New(rand.NewSource(18))
	const n = 3000
	colsList := make([]string, n)
	payloads := make([][]byte, n)
	parsed := make([][]gosync.Column, n)
	for i := range payloads {
		parsed[i], payloads[i] = randomRow(r, texts)
		colsList[i] = columnsJSON(t, parsed[i])
	}
	rows, err := d.Pool.Query(ctx, `SELECT sync_decode_row(u.p, u.c, false)::text
		FROM unnest($1::bytea[], $2::jsonb[]) WITH ORDINALITY u(p, c, i) ORDER BY u.i`, payloads, colsList)
	if err != nil {
		t.Fatal(err)
	}
	i, accepted, refused := 0, 0, 0
	var refusals []int // Go decodes, SQL does not
	for rows.Next() {
		var value *string
		if err := rows.Scan(&value); err != nil {
			t.Fatal(err)
		}
		values, goErr := gosync.DecodeRow(parsed[i], payloads[i])
		switch {
		case goErr != nil && value != nil:
			t.Errorf("row %d (%s, %x): Go refuses (%v), SQL decodes %s", i, colsList[i], payloads[i], goErr, *value)
		case goErr == nil && value == nil:
			refusals = append(refusals, i)
		case goErr == nil:
			accepted++
			if why := sqlAgrees(parsed[i], values, *value); why != "" {
				t.Errorf("row %d (%s, %x): %s (SQL %s)", i, colsList[i], payloads[i], why, *value)
			}
		default:
			refused++
		}
		i++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, i := range refusals {
		_, err := d.Pool.Exec(ctx, "SELECT sync_decode_row($1, $2)", payloads[i], colsList[i])
		if m := errMessage(err); !strings.Contains(m, "U+0000") && !strings.Contains(m, "jsonb cannot store") {
			t.Errorf("row %d (%s, %x): Go decodes, SQL refuses: %s", i, colsList[i], payloads[i], m)
		}
	}
	if i != n || accepted < n/4 || refused < n/4 {
		t.Fatalf("%d rows, %d decoded, %d refused: the sample does not cover both", i, accepted, refused)
	}
}

// TestSQLDecodeRowInParallelWorkers: sync_decode_row is PARALLEL SAFE, so it
// must run inside parallel workers, which may not start subtransactions (an
// exception block): a forced parallel scan decodes every row there.
func TestSQLDecodeRowInParallelWorkers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	cols := []gosync.Column{{Name: "id", Type: gosync.TypeString}, {Name: "doc", Type: gosync.TypeJSON, Nullable: true},
		{Name: "att", Type: gosync.TypeBlobRef, Nullable: true}}
	var payloads [][]byte
	for i := 0; i < 2000; i++ {
		p, err := gosync.EncodeRow(cols, []any{fmt.Sprintf("r%d", i), `{"a":[1,2,{"b":"é"}]}`,
			`{"blobId":"sha256:` + strings.Repeat("ab", 32) + `","byteLength":3}`})
		if err != nil {
			t.Fatal(err)
		}
		payloads = append(payloads, p)
	}
	mustExec(t, d.Pool, "CREATE TABLE codec_rows AS SELECT p FROM unnest($1::bytea[]) p", payloads)
	conn := d.Conn(t)
	for _, s := range []string{"SET force_parallel_mode = on", "SET parallel_setup_cost = 0", "SET parallel_tuple_cost = 0",
		"SET min_parallel_table_scan_size = 0", "SET max_parallel_workers_per_gather = 2"} {
		mustExec(t, conn, s)
	}
	var plan strings.Builder
	rows, err := conn.Query(ctx, `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF)
		SELECT count(*) FROM codec_rows WHERE sync_decode_row(p, $1) ->> 'id' LIKE 'r%'`, columnsJSON(t, cols))
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("decoding in parallel workers: %v", err)
	}
	if !strings.Contains(plan.String(), "Workers Launched: ") || strings.Contains(plan.String(), "Workers Launched: 0") {
		t.Fatalf("no parallel worker ran the decode:\n%s", plan.String())
	}
}

// todosCodec is the example application's todos table in the codec's
// vocabulary: v1 (id, title), v2 appends owner_id (nullable), as an
// upstream server stores them.
func todosCodec(version int64) []gosync.Column {
	cols := []gosync.Column{{Name: "id", Type: gosync.TypeString}, {Name: "title", Type: gosync.TypeString}}
	if version >= 2 {
		cols = append(cols, gosync.Column{Name: "owner_id", Type: gosync.TypeString, Nullable: true})
	}
	return cols
}

// codecLayouts is the marker's layouts text for todosCodec(version), compact
// with the keys in upstream's order.
func codecLayouts(t testing.TB, version int64) string {
	t.Helper()
	b, err := json.Marshal(map[string][]gosync.Column{"todos": todosCodec(version)})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// upstreamMarker writes the marker with the upstream server's statement.
func upstreamMarker(t testing.TB, q execer, version int64, layouts string) {
	t.Helper()
	mustExec(t, q, `INSERT INTO sync_schema_meta(id, schema_version, layouts) VALUES (1, $1, $2)
		ON CONFLICT (id) DO UPDATE SET schema_version=EXCLUDED.schema_version, layouts=EXCLUDED.layouts`, version, layouts)
}

// recordedLayouts is sync_schema_layouts as version -> layouts text.
func recordedLayouts(t testing.TB, q *pgxpool.Pool) map[int64]string {
	t.Helper()
	rows, err := q.Query(context.Background(), "SELECT schema_version, layouts FROM sync_schema_layouts WHERE tables IS NOT NULL")
	if err != nil {
		t.Fatal(err)
	}
	m, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (kv [2]any, err error) {
		var v int64
		var l string
		err = r.Scan(&v, &l)
		return [2]any{v, l}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]string{}
	for _, kv := range m {
		out[kv[0].(int64)] = kv[1].(string)
	}
	return out
}

// TestSchemaLayoutsRecorded: migration 00024 seeds sync_schema_layouts from
// the marker; every later marker write, gosync's bump and the upstream
// server's own upsert alike, records its layouts under its version and
// keeps the older ones (tables: the layouts parsed); a rewrite at the same
// version replaces its record.
// Readers read it; no sync role may write it.
func TestSchemaLayoutsRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, m := emptyMigrator(t)
	if _, err := m.UpTo(ctx, 22); err != nil {
		t.Fatal(err)
	}
	upstreamMarker(t, d.Pool, 1, codecLayouts(t, 1))
	if _, err := m.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if got := recordedLayouts(t, d.Pool); len(got) != 1 || got[1] != codecLayouts(t, 1) {
		t.Fatalf("after migrating: %v, want the marker's v1", got)
	}
	upstreamMarker(t, d.Pool, 2, codecLayouts(t, 2))
	// gosync's bump: sync_set_schema_version in the bump transaction, as
	// EnsureSchema writes the marker.
	// (a bump only appends nullable columns: 00023)
	marker3 := strings.TrimSuffix(codecLayouts(t, 2), "]}") + `,{"name":"extra","type":"string","nullable":true}]}`
	err := pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT sync_begin_schema_change()"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "SELECT sync_set_schema_version(3, $1)", marker3)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	got := recordedLayouts(t, d.Pool)
	if len(got) != 3 || got[1] != codecLayouts(t, 1) || got[2] != codecLayouts(t, 2) || got[3] != marker3 {
		t.Fatalf("after upstream's bump to 2 and gosync's to 3: %v", got)
	}
	mustExec(t, d.Pool, "UPDATE sync_schema_meta SET layouts = $1", codecLayouts(t, 2))
	if got := recordedLayouts(t, d.Pool); got[3] != codecLayouts(t, 2) || len(got) != 3 {
		t.Fatalf("a rewrite at version 3 did not replace its record: %v", got)
	}
	reader := loginAs(t, d, "sync_reader", nil)
	if n := queryOne[int64](t, reader, "SELECT count(*) FROM sync_schema_layouts"); n != 3 {
		t.Fatalf("sync_reader reads %d records", n)
	}
	for _, role := range []string{"sync_writer", "sync_backfill", "sync_admin"} {
		pool := loginAs(t, d, role, nil)
		for _, stmt := range []string{"INSERT INTO sync_schema_layouts VALUES (9, '{}', '{}')",
			"UPDATE sync_schema_layouts SET layouts = '{}'", "DELETE FROM sync_schema_layouts", "TRUNCATE sync_schema_layouts"} {
			_, err := pool.Exec(ctx, stmt)
			wantSQLState(t, role+": "+stmt, err, "42501")
		}
	}
	if got := recordedLayouts(t, d.Pool); len(got) != 3 {
		t.Fatalf("the refused writes changed the records: %v", got)
	}
	// A marker another writer left unreadable is written (the marker rules
	// treat it as disagreeing) and recorded as no layout.
	mustExec(t, d.Pool, `UPDATE sync_schema_meta SET layouts = '{"t": ['`)
	if !queryOne[bool](t, d.Pool, `SELECT tables IS NULL AND layouts = '{"t": [' FROM sync_schema_layouts WHERE schema_version = 3`) {
		t.Fatal("an unreadable marker is not recorded as such")
	}
}

// TestDecodeLogged: a change decodes with its writer_version's layout (the
// greatest recorded at or below it, else the oldest); a NULL writer_version
// with the newest recorded layout under which it decodes; a layout of a
// version from before 00024 is recorded by sync_record_schema_layouts
// (sync_admin only, below the marker, never changed once recorded).
func TestDecodeLogged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	upstreamMarker(t, d.Pool, 2, codecLayouts(t, 2))
	admin := loginAs(t, d, "sync_admin", nil)
	writer := loginAs(t, d, "sync_writer", nil)
	reader := loginAs(t, d, "sync_reader", nil)
	_, err := writer.Exec(ctx, "SELECT sync_record_schema_layouts(1, $1)", codecLayouts(t, 1))
	wantSQLState(t, "sync_writer records layouts", err, "42501")
	for _, bad := range []struct {
		version int64
		layouts string
		words   string
	}{{2, codecLayouts(t, 2), "below the marker"}, {0, "{}", "at least 1"}, {1, "[]", "JSON object"}, {1, "{bad", "JSON object"}} {
		_, err := admin.Exec(ctx, "SELECT sync_record_schema_layouts($1, $2)", bad.version, bad.layouts)
		wantSQLState(t, fmt.Sprintf("record %d %s", bad.version, bad.layouts), err, "22023", bad.words)
	}
	mustExec(t, admin, "SELECT sync_record_schema_layouts(1, $1)", codecLayouts(t, 1))
	mustExec(t, admin, "SELECT sync_record_schema_layouts(1, $1)", codecLayouts(t, 1))
	_, err = admin.Exec(ctx, "SELECT sync_record_schema_layouts(1, $1)", codecLayouts(t, 2))
	wantSQLState(t, "re-record version 1", err, "22023", "recorded already")
	if got := recordedLayouts(t, d.Pool); len(got) != 2 || got[1] != codecLayouts(t, 1) {
		t.Fatalf("records %v", got)
	}

	v1, _ := gosync.EncodeRow(todosCodec(1), []any{"t1", "old"})
	v2, _ := gosync.EncodeRow(todosCodec(2), []any{"t1", "new", "u1"})
	for _, c := range []struct {
		writer  *int64
		payload []byte
		want    string // the decoded title, or "refused"
	}{
		{v(1), v1, "old"}, {v(2), v2, "new"}, {v(7), v2, "new"}, {v(0), v1, "old"},
		{v(1), v2, "refused"}, {v(2), v1, "refused"},
		{nil, v1, "old"}, {nil, v2, "new"}, {nil, []byte{0, 1}, "refused"},
	} {
		var title *string
		err := reader.QueryRow(ctx, "SELECT sync_decode_logged('todos', $1, $2) ->> 'title'", c.writer, c.payload).Scan(&title)
		what := fmt.Sprintf("writer_version %v, payload %x", c.writer, c.payload)
		if c.writer != nil {
			what = fmt.Sprintf("writer_version %d, payload %x", *c.writer, c.payload)
		}
		if c.want == "refused" {
			wantSQLState(t, what, err, "22023", "at byte")
			continue
		}
		if err != nil || title == nil || *title != c.want {
			t.Errorf("%s: %v, %v; want %q", what, title, err, c.want)
		}
	}
	if n := queryOne[*string](t, reader, "SELECT sync_decode_logged('todos', 1, NULL)::text"); n != nil {
		t.Errorf("a delete decodes to %v", *n)
	}
	_, err = reader.Exec(ctx, "SELECT sync_decode_logged('nope', 1, '\\x00')")
	wantSQLState(t, "an unknown table", err, "22023", "no recorded layout")
	if got := queryOne[*string](t, reader, "SELECT sync_layout_for(NULL, 'todos')::text"); got != nil {
		t.Errorf("sync_layout_for(NULL) = %s", *got)
	}

	// sync_decode_change reads the commit's writer_version.
	seedCodecCommits(t, d.Pool, "p1", []codecCommit{{writer: v(1), payload: v1}, {writer: nil, payload: v2}, {writer: v(2), payload: nil}})
	for seq, want := range map[int64]string{1: `{"id": "t1", "title": "old"}`, 2: `{"id": "t1", "title": "new", "owner_id": "u1"}`} {
		if got := queryOne[string](t, reader, "SELECT sync_decode_change('p1', $1, 0)::text", seq); got != want {
			t.Errorf("change %d decodes to %s, want %s", seq, got, want)
		}
	}
	if got := queryOne[*string](t, reader, "SELECT sync_decode_change('p1', 3, 0)::text"); got != nil {
		t.Errorf("a delete decodes to %s", *got)
	}
	_, err = reader.Exec(ctx, "SELECT sync_decode_change('p1', 9, 0)")
	wantSQLState(t, "a missing change", err, "22023", "no change")
}

// codecCommit is one seeded commit of one todos change (payload nil: a delete).
type codecCommit struct {
	writer  *int64
	rowID   string
	payload []byte
}

// seedCodecCommits appends commits to partition as a restore does (one
// statement, triggers off for the transaction: the harness is a superuser).
func seedCodecCommits(t testing.TB, pool *pgxpool.Pool, partition string, commits []codecCommit) {
	t.Helper()
	ctx := context.Background()
	writers := make([]*int64, len(commits))
	rowIDs := make([]string, len(commits))
	payloads := make([][]byte, len(commits))
	for i, c := range commits {
		writers[i], payloads[i], rowIDs[i] = c.writer, c.payload, c.rowID
		if rowIDs[i] == "" {
			rowIDs[i] = "t1"
		}
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `
WITH base AS (
  INSERT INTO sync_partitions AS p (partition, max_commit_seq) VALUES ($1, cardinality($2::bigint[]))
  ON CONFLICT (partition) DO UPDATE SET max_commit_seq = p.max_commit_seq + cardinality($2::bigint[])
  RETURNING max_commit_seq - cardinality($2::bigint[]) AS start
), input AS (
  SELECT b.start + u.i AS seq, u.w, u.r, u.p FROM base b, unnest($2::bigint[], $3::text[], $4::bytea[]) WITH ORDINALITY u(w, r, p, i)
), commits AS (
  INSERT INTO sync_commits SELECT $1, i.seq, 'seed', 'seed-' || i.seq, 'u0', 0, i.w FROM input i
)
INSERT INTO sync_changes
SELECT $1, i.seq, 0, 'todos', i.r, CASE WHEN i.p IS NULL THEN 2 ELSE 1 END, CASE WHEN i.p IS NULL THEN NULL ELSE 1 END, '{}', i.p
  FROM input i`, partition, writers, rowIDs, payloads)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// codecFleetDB is a database an upstream server could have written: the
// todos marker in the codec's vocabulary, bumped v1 -> v2 by upstream's
// statement half way, n partitions of `changes` commits each (one todo
// change per commit, every 13th a delete): the first half written under
// v1 (by a writer stamping version 1, or by an old one stamping none) on
// 40 rows, the second under v2 on 20 of them. It returns the partitions and each partition's todos
// (row id -> title) after the last change.
func codecFleetDB(t *testing.T, n, changes int) (*pgtest.DB, []string, map[string]map[string]string) {
	t.Helper()
	d := pgtest.New(t)
	want := map[string]map[string]string{}
	partitions := make([]string, n)
	seed := func(version int64) {
		for i := range partitions {
			partitions[i] = fmt.Sprintf("f%03d", i)
			rows := want[partitions[i]]
			if rows == nil {
				rows = map[string]string{}
				want[partitions[i]] = rows
			}
			var commits []codecCommit
			for g := 1; g <= changes/2; g++ {
				// v2 rewrites half the rows only: the others' last change
				// is a v1 one, some from a writer stamping no version.
				c := codecCommit{rowID: fmt.Sprintf("t%d", g%(40/int(version))), writer: v(version)}
				if version == 1 && g%3 == 0 {
					c.writer = nil // an upstream server before 0.23
				}
				title := fmt.Sprintf("todo %d/%d", version, g)
				if g%13 == 0 {
					delete(rows, c.rowID)
				} else {
					values := []any{c.rowID, title}
					if version >= 2 {
						values = append(values, fmt.Sprintf("u%d", g%7))
					}
					p, err := gosync.EncodeRow(todosCodec(version), values)
					if err != nil {
						t.Fatal(err)
					}
					c.payload, rows[c.rowID] = p, title
				}
				commits = append(commits, c)
			}
			seedCodecCommits(t, d.Pool, partitions[i], commits)
		}
	}
	upstreamMarker(t, d.Pool, 1, codecLayouts(t, 1))
	seed(1)
	upstreamMarker(t, d.Pool, 2, codecLayouts(t, 2))
	seed(2)
	return d, partitions, want
}

// BenchmarkSQLDecodeRow: decoding 10^4 payloads of an eight-column row
// (the shape of upstream's fixture tasks table) in SQL against reading
// them raw; report the ratio of the two ns/op.
func BenchmarkSQLDecodeRow(b *testing.B) {
	ctx := context.Background()
	d := pgtest.New(b)
	cols := []gosync.Column{{Name: "id", Type: gosync.TypeString}, {Name: "org_id", Type: gosync.TypeString},
		{Name: "project_id", Type: gosync.TypeString}, {Name: "title", Type: gosync.TypeString},
		{Name: "done", Type: gosync.TypeBoolean}, {Name: "priority", Type: gosync.TypeInteger, Nullable: true},
		{Name: "tags", Type: gosync.TypeJSON, Nullable: true}, {Name: "attachment", Type: gosync.TypeBlobRef, Nullable: true}}
	payloads := make([][]byte, 10000)
	for i := range payloads {
		var att any
		if i%4 == 0 {
			att = `{"blobId":"sha256:` + strings.Repeat("ab", 32) + `","byteLength":1024,"mediaType":"image/png"}`
		}
		p, err := gosync.EncodeRow(cols, []any{fmt.Sprintf("t-%d", i), "acme", "p-1", "Write the spec, then the code: " + strings.Repeat("é", i%40),
			i%2 == 0, int64(i), `["a","b",{"n":1}]`, att})
		if err != nil {
			b.Fatal(err)
		}
		payloads[i] = p
	}
	mustExec(b, d.Pool, "CREATE TABLE bench_payloads AS SELECT p FROM unnest($1::bytea[]) p", payloads)
	mustExec(b, d.Pool, "ANALYZE bench_payloads")
	layout := columnsJSON(b, cols)
	for _, c := range []struct{ name, sql string }{
		{"raw", "SELECT sum(octet_length(p)) FROM bench_payloads"},
		{"decoded", "SELECT sum(octet_length(sync_decode_row(p, $1)::text)) FROM bench_payloads"},
	} {
		b.Run(c.name, func(b *testing.B) {
			args := []any{}
			if strings.Contains(c.sql, "$1") {
				args = append(args, layout)
			}
			for i := 0; i < b.N; i++ {
				var n int64
				if err := d.Pool.QueryRow(ctx, c.sql, args...).Scan(&n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
