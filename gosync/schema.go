package gosync

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Column is one application column of a synced table, as stored with the
// schema marker.
type Column struct {
	Name string `json:"name"`
	// Type is the Postgres type name, one of: text, integer, bigint,
	// smallint, boolean, double precision, real, numeric, jsonb, json,
	// bytea, uuid, date, timestamptz, timestamp (Validate refuses others).
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
}

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

// columnTypes are the column types a layout may name (Postgres type names).
var columnTypes = map[string]bool{
	"text": true, "integer": true, "bigint": true, "smallint": true, "boolean": true,
	"double precision": true, "real": true, "numeric": true, "jsonb": true, "json": true,
	"bytea": true, "uuid": true, "date": true, "timestamptz": true, "timestamp": true,
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
			case !columnTypes[c.Type]:
				return fmt.Errorf("%w: table %q column %q: unknown type %q", ErrInvalidSchema, t.Name, c.Name, c.Type)
			}
			columns[c.Name] = true
		}
	}
	return nil
}

// storable: valid UTF-8 without NUL, as Postgres text requires.
func storable(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

const math32 = 1<<31 - 1 // the marker's versions meet integer checkpoint columns

// layouts is the marker's JSON: table name → ordered columns.
type layouts map[string][]Column

func (s Schema) layouts() layouts {
	l := layouts{}
	for _, t := range s.Tables {
		l[t.Name] = t.Columns
	}
	return l
}

func (l layouts) json() string {
	b, _ := json.Marshal(l) // map keys sorted: a stable text for a stable schema
	return string(b)
}
