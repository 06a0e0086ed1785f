package gosync

import (
	"reflect"
	"strings"
	"testing"
)

func refs(list string) []CheckpointRef {
	var out []CheckpointRef
	for _, item := range strings.Split(list, ",") {
		if p, n, ok := strings.Cut(item, "/"); ok {
			out = append(out, CheckpointRef{Partition: p, Name: n})
		}
	}
	return out
}

// FuzzEvaluateGate checks the refusal rule against its definition on
// arbitrary gates: nil exactly when every rule passes, otherwise the first
// failing rule with its details.
func FuzzEvaluateGate(f *testing.F) {
	f.Add(int64(2), int64(2), true, "e1", "", "p1/a,p2/b", "p2/b", "p1")
	f.Add(int64(0), int64(1), false, "", "e1", "", "", "p1")
	f.Add(int64(2), int64(2), false, "", "e1", "", "", "p'; DROP")
	f.Add(int64(3), int64(3), true, "e", "e", "x/y", "", "z")
	f.Fuzz(func(t *testing.T, stored, running int64, registered bool, epoch, expected, pending, declared, partition string) {
		g := ServeGate{StoredSchemaVersion: stored, LogEpoch: epoch, Registered: registered, Pending: refs(pending)}
		decl := refs(declared)
		got := EvaluateGate(g, running, decl, partition, expected)
		if again := EvaluateGate(g, running, decl, partition, expected); !reflect.DeepEqual(got, again) {
			t.Fatal("not deterministic")
		}
		schemaOK := stored == running
		epochOK := expected == "" || (registered && epoch == expected)
		var blocking *CheckpointRef
		for i, p := range g.Pending {
			if p.Partition == partition || !containsRef(decl, p) {
				blocking = &g.Pending[i]
				break
			}
		}
		switch {
		case !schemaOK:
			if got == nil || got.Kind != RefusalSchema || got.StoredSchemaVersion != stored || got.RunningSchemaVersion != running {
				t.Fatalf("schema mismatch: %+v", got)
			}
		case !epochOK:
			if got == nil || got.Kind != RefusalEpoch {
				t.Fatalf("epoch mismatch: %+v", got)
			}
		case blocking != nil:
			if got == nil || got.Kind != RefusalCheckpoint || got.Checkpoint != *blocking {
				t.Fatalf("pending %+v: %+v", *blocking, got)
			}
		default:
			if got != nil {
				t.Fatalf("every rule passes, refusal %+v", got)
			}
		}
	})
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
		back, err := parseLayouts(s.layouts().json())
		if err != nil {
			t.Fatal(err)
		}
		if where := s.layouts().mismatch(back); where != "" {
			t.Fatalf("layouts do not survive JSON: %s", where)
		}
	})
}
