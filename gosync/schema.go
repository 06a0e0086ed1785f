package gosync

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Column is one application column of a synced table, as stored with the
// schema marker.
type Column struct {
	Name string `json:"name"`
	// Type is the column's row-codec type, upstream's vocabulary: one of
	// TypeString, TypeInteger, TypeFloat, TypeBoolean, TypeJSON, TypeBytes,
	// TypeBlobRef, TypeCRDT (Validate refuses others). PostgresType says
	// how its materialized column is stored.
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
}

// The row codec's column types (upstream's layouts vocabulary).
const (
	TypeString  = "string"
	TypeInteger = "integer" // i64 on the wire, only within ±(2^53−1)
	TypeFloat   = "float"
	TypeBoolean = "boolean"
	TypeJSON    = "json"     // the raw JSON text, kept verbatim
	TypeBytes   = "bytes"    // also the wire type of an encrypted column
	TypeBlobRef = "blob_ref" // a canonical BlobRef JSON document, stored as text
	TypeCRDT    = "crdt"
)

// columnTypes maps each codec type to the Postgres type upstream gives its
// materialized column.
var columnTypes = map[string]string{
	TypeString: "text", TypeInteger: "bigint", TypeFloat: "double precision", TypeBoolean: "boolean",
	TypeJSON: "jsonb", TypeBytes: "bytea", TypeBlobRef: "text", TypeCRDT: "bytea",
}

// PostgresType is the Postgres type of the column's materialized column, as
// upstream creates it (text, bigint, double precision, boolean, jsonb,
// bytea); empty for a type Validate refuses.
func (c Column) PostgresType() string { return columnTypes[c.Type] }

// Table is a synced application table and its ordered columns.
type Table struct {
	Name    string
	Columns []Column
}

// Schema is the application schema a server runs: its version and the
// layouts stored with the marker (sync_schema_meta.layouts).
type Schema struct {
	Version int64
	Tables  []Table
}

// Validate checks the schema before it touches a database: a version of at
// least 1, named tables and columns without duplicates, known column types,
// names that are valid UTF-8 without NUL bytes (what Postgres text and the
// marker's JSON can hold).
func (s Schema) Validate() error {
	if s.Version < 1 || s.Version > math32 {
		return fmt.Errorf("%w: version %d must be between 1 and %d", ErrInvalidSchema, s.Version, math32)
	}
	tables := map[string]bool{}
	for _, t := range s.Tables {
		if t.Name == "" {
			return fmt.Errorf("%w: a table has no name", ErrInvalidSchema)
		}
		if !storable(t.Name) {
			return fmt.Errorf("%w: table name %q is not valid UTF-8 text", ErrInvalidSchema, t.Name)
		}
		if tables[t.Name] {
			return fmt.Errorf("%w: duplicate table %q", ErrInvalidSchema, t.Name)
		}
		tables[t.Name] = true
		if len(t.Columns) == 0 {
			return fmt.Errorf("%w: table %q has no columns", ErrInvalidSchema, t.Name)
		}
		columns := map[string]bool{}
		for _, c := range t.Columns {
			switch {
			case c.Name == "":
				return fmt.Errorf("%w: table %q has a column with no name", ErrInvalidSchema, t.Name)
			case !storable(c.Name):
				return fmt.Errorf("%w: table %q: column name %q is not valid UTF-8 text", ErrInvalidSchema, t.Name, c.Name)
			case columns[c.Name]:
				return fmt.Errorf("%w: table %q: duplicate column %q", ErrInvalidSchema, t.Name, c.Name)
			case columnTypes[c.Type] == "":
				return fmt.Errorf("%w: table %q column %q: type %q is not a row-codec type (string, integer, float, boolean, json, bytes, blob_ref, crdt)",
					ErrInvalidSchema, t.Name, c.Name, c.Type)
			}
			columns[c.Name] = true
		}
	}
	return nil
}

// storable: valid UTF-8 without NUL, as Postgres text requires.
func storable(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

const math32 = 1<<31 - 1 // the marker's versions meet integer checkpoint columns

// Layouts is the marker's layouts text for the schema, byte for byte what
// the upstream server writes into sync_schema_meta.layouts for it: compact
// JSON as JavaScript's JSON.stringify writes it, the tables in declaration
// order, each column {"name","type","nullable"} in that key order, nothing
// else. Same text, same marker: either server reads the other's.
func (s Schema) Layouts() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, t := range s.Tables {
		if i > 0 {
			b.WriteByte(',')
		}
		jsString(&b, t.Name)
		b.WriteString(":[")
		for j, c := range t.Columns {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"name":`)
			jsString(&b, c.Name)
			b.WriteString(`,"type":`)
			jsString(&b, c.Type)
			b.WriteString(`,"nullable":`)
			b.WriteString(strconv.FormatBool(c.Nullable))
			b.WriteByte('}')
		}
		b.WriteByte(']')
	}
	b.WriteByte('}')
	return b.String()
}

// jsString writes s as JSON.stringify quotes a string: only '"', '\\' and
// the control characters are escaped (\b \f \n \r \t, else \u00xx in
// lowercase hex); '<', '&', U+2028 and the rest stay literal, where Go's
// encoding/json would escape them and change the bytes.
func jsString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte(hex[r>>4])
				b.WriteByte(hex[r&0xf])
				continue
			}
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}
