package gosync

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzEncodeDeclarations checks the declaration encoding the refusal rule
// and the bump receive: every accepted declaration lands in exactly one of
// the arrays, in order; the pair arrays stay parallel; an ambiguous or
// nameless declaration is refused.
func FuzzEncodeDeclarations(f *testing.F) {
	f.Add("p1/a,*/b,p2/a")
	f.Add("/a")
	f.Add("p/,*/x,*/x")
	f.Fuzz(func(t *testing.T, list string) {
		var ds []CheckpointDeclaration
		for _, item := range strings.Split(list, ",") {
			p, n, _ := strings.Cut(item, "/")
			ds = append(ds, CheckpointDeclaration{Partition: strings.TrimPrefix(p, "*"), AllPartitions: strings.HasPrefix(p, "*"), Name: n})
		}
		got, err := encodeDeclarations(ds)
		valid := true
		for _, d := range ds {
			valid = valid && d.Name != "" && (d.AllPartitions != (d.Partition != ""))
		}
		if (err == nil) != valid {
			t.Fatalf("encode %+v: err %v, valid %v", ds, err, valid)
		}
		if err != nil {
			return
		}
		var names, parts, pairNames []string
		for _, d := range ds {
			if d.AllPartitions {
				names = append(names, d.Name)
			} else {
				parts, pairNames = append(parts, d.Partition), append(pairNames, d.Name)
			}
		}
		if !reflect.DeepEqual(got.Names, orEmpty(names)) || !reflect.DeepEqual(got.Partitions, orEmpty(parts)) ||
			!reflect.DeepEqual(got.PartitionNames, orEmpty(pairNames)) {
			t.Fatalf("encode %+v = %+v", ds, got)
		}
	})
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// FuzzSchemaValidate checks the schema's argument validation: it never
// panics, accepts only what it promises to, and an accepted schema's
// layouts text is compact JSON that reads back as the same tables and
// columns in declaration order, with no raw control character.
func FuzzSchemaValidate(f *testing.F) {
	f.Add(int64(1), "todos", "id:string,title:string", "lists", "id:integer")
	f.Add(int64(0), "", "", "", "")
	f.Add(int64(2), "t", "a:string,a:string", "t", "b:json")
	f.Add(int64(1<<40), "t\x00", "a:varchar(9", "u", "a:bytes?")
	f.Add(int64(3), "z<&\u2028\"\\\n\x01", "b:blob_ref?,c:crdt", "a", "x:float,y:boolean?")
	f.Add(int64(3), "t", "a:text", "u", "b:bytea")
	f.Fuzz(func(t *testing.T, version int64, t1, c1, t2, c2 string) {
		parse := func(name, cols string) Table {
			tb := Table{Name: name}
			for _, c := range strings.Split(cols, ",") {
				n, typ, _ := strings.Cut(c, ":")
				nullable := strings.HasSuffix(typ, "?")
				tb.Columns = append(tb.Columns, Column{Name: n, Type: strings.TrimSuffix(typ, "?"), Nullable: nullable})
			}
			return tb
		}
		s := Schema{Version: version, Tables: []Table{parse(t1, c1), parse(t2, c2)}}
		if err := s.Validate(); err != nil {
			return
		}
		if version < 1 || version > math32 || t1 == "" || t1 == t2 {
			t.Fatalf("accepted %+v", s)
		}
		for _, tb := range s.Tables {
			seen := map[string]bool{}
			for _, c := range tb.Columns {
				if c.Name == "" || seen[c.Name] || c.PostgresType() == "" || !storable(c.Name) || !storable(tb.Name) {
					t.Fatalf("accepted table %+v", tb)
				}
				seen[c.Name] = true
			}
		}
		text := s.Layouts()
		for _, r := range text {
			if r < 0x20 {
				t.Fatalf("layouts %q hold a raw control character", text)
			}
		}
		back, err := readLayouts(text)
		if err != nil {
			t.Fatalf("layouts %q: %v", text, err)
		}
		if !reflect.DeepEqual(back, s.Tables) {
			t.Fatalf("layouts %q read back as %+v, want %+v", text, back, s.Tables)
		}
	})
}

// readLayouts reads a layouts text in order: tables, then each column with
// exactly the keys name, type, nullable in that order.
func readLayouts(text string) ([]Table, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	next := func() json.Token {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		return tok
	}
	var out []Table
	if next() != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	for dec.More() {
		name, ok := next().(string)
		if !ok || next() != json.Delim('[') {
			return nil, errors.New("bad table")
		}
		tb := Table{Name: name}
		for dec.More() {
			var c Column
			if next() != json.Delim('{') || next() != "name" {
				return nil, errors.New("bad column")
			}
			c.Name, _ = next().(string)
			if next() != "type" {
				return nil, errors.New("bad column type key")
			}
			c.Type, _ = next().(string)
			if next() != "nullable" {
				return nil, errors.New("bad column nullable key")
			}
			c.Nullable, ok = next().(bool)
			if !ok || next() != json.Delim('}') {
				return nil, errors.New("bad column end")
			}
			tb.Columns = append(tb.Columns, c)
		}
		next()
		out = append(out, tb)
	}
	if next() != json.Delim('}') {
		return nil, errors.New("bad end")
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("trailing data")
	}
	return out, nil
}
