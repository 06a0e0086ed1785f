package gosync

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
)

// rowVector is one element of testdata/row-codec-vectors.json (upstream's
// own encodeRow/decodeRow outputs; see its README "Value representation").
type rowVector struct {
	Name         string            `json:"name"`
	Columns      []Column          `json:"columns"`
	Hex          string            `json:"hex"`
	Values       []json.RawMessage `json:"values"`
	DecodeOnly   bool              `json:"decode_only"`
	ReencodedHex string            `json:"reencoded_hex"`
	Error        *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func loadRowVectors(t testing.TB) []rowVector {
	b, err := os.ReadFile("testdata/row-codec-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vs []rowVector
	if err := json.Unmarshal(b, &vs); err != nil {
		t.Fatal(err)
	}
	return vs
}

// vectorValue turns the vectors' JSON representation into DecodeRow's Go value.
func vectorValue(t testing.TB, typ string, raw json.RawMessage) any {
	if string(raw) == "null" {
		return nil
	}
	var special struct {
		Float    *string `json:"float"`
		BytesHex *string `json:"bytes_hex"`
	}
	if raw[0] == '{' {
		if err := json.Unmarshal(raw, &special); err != nil {
			t.Fatal(err)
		}
		switch {
		case special.BytesHex != nil:
			b, err := hex.DecodeString(*special.BytesHex)
			if err != nil {
				t.Fatal(err)
			}
			return b
		case special.Float != nil:
			return map[string]float64{"NaN": math.NaN(), "Infinity": math.Inf(1), "-Infinity": math.Inf(-1), "-0": math.Copysign(0, -1)}[*special.Float]
		}
	}
	var v any
	switch typ {
	case TypeString, TypeJSON, TypeBlobRef:
		var s string
		err := json.Unmarshal(raw, &s)
		v = s
		if err != nil {
			t.Fatal(err)
		}
	case TypeInteger:
		var n int64
		if err := json.Unmarshal(raw, &n); err != nil {
			t.Fatal(err)
		}
		v = n
	case TypeFloat:
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatal(err)
		}
		v = f
	case TypeBoolean:
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Fatal(err)
		}
		v = b
	default:
		t.Fatalf("type %q with value %s", typ, raw)
	}
	return v
}

// sameValues compares decoded rows, NaN equal to NaN and -0 apart from +0.
func sameValues(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		fa, okA := a[i].(float64)
		fb, okB := b[i].(float64)
		if okA && okB {
			if math.Float64bits(fa) != math.Float64bits(fb) && !(math.IsNaN(fa) && math.IsNaN(fb)) {
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

// TestRowCodecVectors: every valid vector encodes to its bytes and decodes
// back; every decode-only one decodes and re-encodes to reencoded_hex; every
// invalid one is refused with a *RowDecodeError carrying upstream's reason.
func TestRowCodecVectors(t *testing.T) {
	vs := loadRowVectors(t)
	if len(vs) != 143 {
		t.Fatalf("%d vectors, want 143", len(vs))
	}
	var valid, decodeOnly, invalid int
	for _, v := range vs {
		t.Run(v.Name, func(t *testing.T) {
			payload, err := hex.DecodeString(v.Hex)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeRow(v.Columns, payload)
			if v.Error != nil {
				invalid++
				var de *RowDecodeError
				if !errors.As(err, &de) || !errors.Is(err, ErrInvalidPayload) {
					t.Fatalf("decode of an invalid payload: %v (%#v)", err, got)
				}
				// Upstream's reason, modulo the column name it puts inside.
				want := strings.Replace(v.Error.Message, "json column j ", "json column ", 1)
				if de.Reason != want {
					t.Errorf("reason %q, upstream says %q", de.Reason, v.Error.Message)
				}
				if de.Offset < 0 || de.Offset > len(payload) {
					t.Errorf("offset %d outside the payload", de.Offset)
				}
				if len(v.Columns) == 1 && de.Column != v.Columns[0].Name && !strings.Contains(want, "trailing") && !strings.Contains(want, "padding") && len(payload) > 0 {
					t.Errorf("column %q, want %q", de.Column, v.Columns[0].Name)
				}
				return
			}
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			want := make([]any, len(v.Columns))
			for i, c := range v.Columns {
				want[i] = vectorValue(t, c.Type, v.Values[i])
			}
			if !sameValues(got, want) {
				t.Fatalf("decoded %#v, want %#v", got, want)
			}
			enc, err := EncodeRow(v.Columns, got)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			wantHex := v.Hex
			if v.DecodeOnly {
				decodeOnly++
				wantHex = v.ReencodedHex
			} else {
				valid++
				if enc2, err := EncodeRow(v.Columns, want); err != nil || hex.EncodeToString(enc2) != v.Hex {
					t.Fatalf("encode of the vector's values: %x, %v; want %s", enc2, err, v.Hex)
				}
			}
			if hex.EncodeToString(enc) != wantHex {
				t.Fatalf("re-encoded %x, want %s", enc, wantHex)
			}
		})
	}
	if valid != 89 || decodeOnly != 4 || invalid != 50 {
		t.Fatalf("%d valid, %d decode-only, %d invalid; want 89, 4, 50", valid, decodeOnly, invalid)
	}
}

// TestEncodeRowRefuses: what the decoder would refuse is not written.
func TestEncodeRowRefuses(t *testing.T) {
	str := []Column{{Name: "s", Type: TypeString}}
	for name, c := range map[string]struct {
		cols   []Column
		values []any
	}{
		"count":          {str, nil},
		"null":           {str, []any{nil}},
		"wrong type":     {str, []any{1}},
		"invalid utf-8":  {str, []any{"\xff"}},
		"unsafe integer": {[]Column{{Name: "i", Type: TypeInteger}}, []any{int64(1 << 53)}},
		"bad json":       {[]Column{{Name: "j", Type: TypeJSON}}, []any{"{bad"}},
		"bad blob_ref":   {[]Column{{Name: "b", Type: TypeBlobRef}}, []any{`{"blobId":"x","byteLength":1}`}},
		"unknown type":   {[]Column{{Name: "x", Type: "text"}}, []any{"x"}},
		"bytes string":   {[]Column{{Name: "b", Type: TypeBytes}}, []any{"x"}},
	} {
		if b, err := EncodeRow(c.cols, c.values); !errors.Is(err, ErrInvalidRow) {
			t.Errorf("%s: encoded %x, %v", name, b, err)
		}
	}
}

// TestBlobRefByteLengthAsJavaScript: byteLength is read as JavaScript reads
// a number (the nearest double), then must be a safe integer.
func TestBlobRefByteLengthAsJavaScript(t *testing.T) {
	id := `"sha256:` + strings.Repeat("ab", 32) + `"`
	for n, ok := range map[string]bool{
		"0": true, "-0": true, "1.0": true, "1e3": true, "1.00000000000000001": true, "9007199254740991": true,
		"1e-400": true, "9007199254740991.5": false, "9007199254740992": false, "-1": false, "1.5": false,
		"1e400": false, `"1"`: false, "null": false, "5e-324": false,
	} {
		reason := checkBlobRef(`{"blobId":` + id + `,"byteLength":` + n + `}`)
		if (reason == "") != ok {
			t.Errorf("byteLength %s: %q, want accepted %v", n, reason, ok)
		}
	}
	// Duplicate keys: JSON.parse keeps the first position and the last value.
	if r := checkBlobRef(`{"blobId":"x","byteLength":1,"blobId":` + id + `}`); r != "" {
		t.Errorf("duplicate blobId, last one valid: %q", r)
	}
	if r := checkBlobRef(`{"byteLength":1,"blobId":` + id + `,"byteLength":2}`); r == "" {
		t.Error("duplicate byteLength first: accepted")
	}
}

// FuzzDecodeRow: decoding never panics, and whatever decodes re-encodes to
// a payload that decodes to the same values and re-encodes to the same bytes.
func FuzzDecodeRow(f *testing.F) {
	for _, v := range loadRowVectors(f) {
		b, _ := hex.DecodeString(v.Hex)
		types := ""
		for _, c := range v.Columns {
			types += string(typeLetters[c.Type])
			if c.Nullable {
				types += "?"
			}
		}
		f.Add(types, b)
	}
	f.Fuzz(func(t *testing.T, types string, payload []byte) {
		var cols []Column
		for i, r := range types {
			typ, ok := letterTypes[r]
			if r == '?' && len(cols) > 0 {
				cols[len(cols)-1].Nullable = true
				continue
			}
			if !ok {
				typ = "unknown"
			}
			cols = append(cols, Column{Name: "c" + string(rune('a'+i%26)), Type: typ})
		}
		got, err := DecodeRow(cols, payload)
		if err != nil {
			if !errors.Is(err, ErrInvalidPayload) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		enc, err := EncodeRow(cols, got)
		if err != nil {
			t.Fatalf("decoded %#v does not re-encode: %v", got, err)
		}
		again, err := DecodeRow(cols, enc)
		if err != nil || !sameValues(got, again) {
			t.Fatalf("decode(encode(%#v)) = %#v, %v", got, again, err)
		}
		if enc2, _ := EncodeRow(cols, again); !bytes.Equal(enc, enc2) {
			t.Fatalf("re-encoding is not stable: %x then %x", enc, enc2)
		}
	})
}

var typeLetters = map[string]rune{TypeString: 's', TypeInteger: 'i', TypeFloat: 'f', TypeBoolean: 'b',
	TypeJSON: 'j', TypeBytes: 'y', TypeBlobRef: 'r', TypeCRDT: 'c'}

var letterTypes = func() map[rune]string {
	m := map[rune]string{}
	for k, v := range typeLetters {
		m[v] = k
	}
	return m
}()
