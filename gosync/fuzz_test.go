package gosync

import (
	"encoding/json"
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
// panics, accepts only what it promises to, and an accepted schema's layouts
// survive the marker's JSON and match themselves.
func FuzzSchemaValidate(f *testing.F) {
	f.Add(int64(1), "todos", "id:text,title:text", "lists", "id:text")
	f.Add(int64(0), "", "", "", "")
	f.Add(int64(2), "t", "a:text,a:text", "t", "b:jsonb")
	f.Add(int64(1<<40), "t\x00", "a:varchar(9", "u", "a:bigint?")
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
				if c.Name == "" || seen[c.Name] || !columnTypes[c.Type] || !storable(c.Name) || !storable(tb.Name) {
					t.Fatalf("accepted table %+v", tb)
				}
				seen[c.Name] = true
			}
		}
		back := layouts{}
		if err := json.Unmarshal([]byte(s.layouts().json()), &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, s.layouts()) {
			t.Fatalf("layouts do not survive JSON: %v, want %v", back, s.layouts())
		}
	})
}
