package gosync

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// The upstream row codec (packages/core, SPEC §2.4), byte for byte as
// gosync/testdata/row-codec-vectors.json (observed from upstream) pins it: a change payload and
// a current row's _sync_payload are a null bitmap (ceil(n/8) bytes, bit i =
// column i, LSB first, padding bits 0) followed by the non-null values in
// column order, untagged.
//
// Column types are the codec's vocabulary (TypeString ... TypeCRDT in
// schema.go); the comments of the wire format per type:
//   string, json, blob_ref  u32 LE length + UTF-8 (json and blob_ref text kept verbatim)
//   bytes, crdt             u32 LE length + raw bytes
//   integer                 8 bytes LE two's complement, within ±(2^53−1)
//   float                   8 bytes LE IEEE-754
//   boolean                 one byte, 0 or 1

// maxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER: the codec's i64 is
// 8 bytes, but upstream decodes it to a number, so it refuses anything wider.
const maxSafeInteger = 1<<53 - 1

// canonicalNaN is the bit pattern upstream writes for every NaN.
const canonicalNaN = 0x7ff8000000000000

// Decoded values, per column type: nil for NULL; string for string, json and
// blob_ref (the text exactly as stored, minus a leading U+FEFF, which
// upstream's decoder drops); int64 for integer; float64 for float (every
// NaN is the canonical one); bool for boolean; []byte for bytes and crdt.
//
// EncodeRow takes the same types, plus json.RawMessage for json and
// blob_ref, any Go integer type for integer and float32 for float. Unlike
// upstream's encoder it refuses what the decoder would refuse (invalid
// UTF-8, json that does not parse, a blob_ref that is not canonical), so
// every payload gosync writes decodes on the upstream server.

// EncodeRow encodes values (one per column, in column order) as the row
// codec does. Errors are *RowEncodeError (errors.Is ErrInvalidRow).
func EncodeRow(cols []Column, values []any) ([]byte, error) {
	if len(values) != len(cols) {
		return nil, &RowEncodeError{Column: "", Reason: fmt.Sprintf("%d values for %d columns", len(values), len(cols))}
	}
	out := make([]byte, (len(cols)+7)/8, 64)
	for i, c := range cols {
		v := values[i]
		fail := func(format string, args ...any) error {
			return &RowEncodeError{Column: c.Name, Reason: fmt.Sprintf(format, args...)}
		}
		if v == nil {
			if !c.Nullable {
				return nil, fail("NULL in a non-nullable column")
			}
			out[i/8] |= 1 << (i % 8)
			continue
		}
		switch c.Type {
		case TypeString, TypeJSON, TypeBlobRef:
			var s string
			switch x := v.(type) {
			case string:
				s = x
			case json.RawMessage:
				if c.Type == TypeString {
					return nil, fail("a %T for a string column", v)
				}
				s = string(x)
			default:
				return nil, fail("a %T for a %s column", v, c.Type)
			}
			if !utf8.ValidString(s) {
				return nil, fail("invalid UTF-8")
			}
			if reason := checkText(c.Type, stripBOM(s)); reason != "" {
				return nil, fail("%s", reason)
			}
			out = appendChunk(out, []byte(s))
		case TypeBytes, TypeCRDT:
			b, ok := v.([]byte)
			if !ok {
				return nil, fail("a %T for a %s column", v, c.Type)
			}
			out = appendChunk(out, b)
		case TypeInteger:
			n, ok := toInt64(v)
			if !ok {
				return nil, fail("a %T for an integer column", v)
			}
			if n > maxSafeInteger || n < -maxSafeInteger {
				return nil, fail("integer %d outside ±(2^53−1)", n)
			}
			out = binary.LittleEndian.AppendUint64(out, uint64(n))
		case TypeFloat:
			var f float64
			switch x := v.(type) {
			case float64:
				f = x
			case float32:
				f = float64(x)
			default:
				return nil, fail("a %T for a float column", v)
			}
			bits := math.Float64bits(f)
			if math.IsNaN(f) {
				bits = canonicalNaN
			}
			out = binary.LittleEndian.AppendUint64(out, bits)
		case TypeBoolean:
			b, ok := v.(bool)
			if !ok {
				return nil, fail("a %T for a boolean column", v)
			}
			if b {
				out = append(out, 1)
			} else {
				out = append(out, 0)
			}
		default:
			return nil, fail("unknown column type %q", c.Type)
		}
	}
	return out, nil
}

func appendChunk(out, b []byte) []byte {
	out = binary.LittleEndian.AppendUint32(out, uint32(len(b)))
	return append(out, b...)
}

func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case int16:
		return int64(x), true
	case int8:
		return int64(x), true
	case uint8:
		return int64(x), true
	case uint16:
		return int64(x), true
	case uint32:
		return int64(x), true
	case uint:
		if uint64(x) > math.MaxInt64 {
			return math.MaxInt64, true
		}
		return int64(x), true
	case uint64:
		if x > math.MaxInt64 {
			return math.MaxInt64, true
		}
		return int64(x), true
	}
	return 0, false
}

// DecodeRow decodes a row codec payload against its layout's columns. It
// accepts exactly what upstream's decodeRow accepts; errors are
// *RowDecodeError (errors.Is ErrInvalidPayload) naming the column and the
// byte offset.
func DecodeRow(cols []Column, payload []byte) ([]any, error) {
	n := len(cols)
	nb := (n + 7) / 8
	if len(payload) < nb {
		return nil, &RowDecodeError{Offset: len(payload), Reason: fmt.Sprintf("truncated input: needed %d bytes, have %d", nb, len(payload))}
	}
	bitmap := payload[:nb]
	if n%8 != 0 && bitmap[nb-1]>>(n%8) != 0 {
		return nil, &RowDecodeError{Offset: nb - 1, Reason: "non-zero padding bit in row null bitmap"}
	}
	values := make([]any, n)
	off := nb
	for i, c := range cols {
		fail := func(at int, format string, args ...any) error {
			return &RowDecodeError{Column: c.Name, Offset: at, Reason: fmt.Sprintf(format, args...)}
		}
		need := func(k int) error {
			if len(payload)-off < k {
				return fail(off, "truncated input: needed %d bytes, have %d", k, len(payload)-off)
			}
			return nil
		}
		if bitmap[i/8]&(1<<(i%8)) != 0 {
			if !c.Nullable {
				return nil, fail(i/8, "null bit set for non-nullable column %s", c.Name)
			}
			continue
		}
		start := off
		switch c.Type {
		case TypeString, TypeJSON, TypeBlobRef, TypeBytes, TypeCRDT:
			if err := need(4); err != nil {
				return nil, err
			}
			k := binary.LittleEndian.Uint32(payload[off:])
			off += 4
			if uint64(len(payload)-off) < uint64(k) {
				return nil, fail(off, "truncated input: needed %d bytes, have %d", k, len(payload)-off)
			}
			body := payload[off : off+int(k)]
			off += int(k)
			if c.Type == TypeBytes || c.Type == TypeCRDT {
				values[i] = bytes.Clone(body)
				continue
			}
			if !utf8.Valid(body) {
				return nil, fail(start, "invalid UTF-8 in string")
			}
			s := stripBOM(string(body))
			if reason := checkText(c.Type, s); reason != "" {
				return nil, fail(start, "%s", reason)
			}
			values[i] = s
		case TypeInteger:
			if err := need(8); err != nil {
				return nil, err
			}
			x := int64(binary.LittleEndian.Uint64(payload[off:]))
			if x > maxSafeInteger || x < -maxSafeInteger {
				return nil, fail(off, "i64 outside the safe-integer contract: %d", x)
			}
			off += 8
			values[i] = x
		case TypeFloat:
			if err := need(8); err != nil {
				return nil, err
			}
			f := math.Float64frombits(binary.LittleEndian.Uint64(payload[off:]))
			if math.IsNaN(f) {
				f = math.Float64frombits(canonicalNaN)
			}
			off += 8
			values[i] = f
		case TypeBoolean:
			if err := need(1); err != nil {
				return nil, err
			}
			switch payload[off] {
			case 0:
				values[i] = false
			case 1:
				values[i] = true
			default:
				return nil, fail(off, "invalid bool byte 0x%x", payload[off])
			}
			off++
		default:
			return nil, fail(off, "unknown column type %q", c.Type)
		}
	}
	if off != len(payload) {
		return nil, &RowDecodeError{Offset: off, Reason: "trailing bytes after row payload"}
	}
	return values, nil
}

// stripBOM drops one leading U+FEFF, as upstream's TextDecoder does.
func stripBOM(s string) string {
	if len(s) >= 3 && s[:3] == "\uFEFF" {
		return s[3:]
	}
	return s
}

// checkText is the decoder's check of a json or blob_ref text ("" when it
// passes): json must be one JSON document (JSON.parse's grammar, which is
// RFC 8259's); a blob_ref must be the canonical BlobRef object.
func checkText(typ, s string) string {
	switch typ {
	case TypeJSON:
		if !json.Valid([]byte(s)) {
			return "json column does not parse as a JSON document"
		}
	case TypeBlobRef:
		return checkBlobRef(s)
	}
	return ""
}

// checkBlobRef: the canonical BlobRef (§5.9.1), checked after parsing as
// upstream does: an object whose keys (first occurrence order, the last
// duplicate's value, as JSON.parse builds it) are blobId, byteLength, then
// optionally mediaType and name, in that order and nothing else.
func checkBlobRef(s string) string {
	if !json.Valid([]byte(s)) {
		return "blob_ref value does not parse as a JSON document (§5.9.1)"
	}
	trimmed := bytes.TrimLeft([]byte(s), " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return "blob_ref value must be a JSON object (§5.9.1)"
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // '{'
		return "blob_ref value does not parse as a JSON document (§5.9.1)"
	}
	var keys []string
	vals := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return "blob_ref value does not parse as a JSON document (§5.9.1)"
		}
		k, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return "blob_ref value does not parse as a JSON document (§5.9.1)"
		}
		if _, seen := vals[k]; !seen {
			keys = append(keys, k)
		}
		vals[k] = raw
	}
	canonical := []string{"blobId", "byteLength", "mediaType", "name"}
	for _, k := range keys {
		known := false
		for _, c := range canonical {
			known = known || k == c
		}
		if !known {
			return fmt.Sprintf("blob_ref has unknown key %q (§5.9.1)", k)
		}
	}
	want := []string{}
	for _, c := range canonical {
		if _, ok := vals[c]; ok {
			want = append(want, c)
		}
	}
	for i := range keys {
		if keys[i] != want[i] {
			return "blob_ref keys are not in canonical order (§5.9.1)"
		}
	}
	var id string
	if json.Unmarshal(vals["blobId"], &id) != nil || !blobIDOK(id) {
		return `blob_ref.blobId must be "sha256:<64 hex>" (§5.9.1)`
	}
	if !safeLength(vals["byteLength"]) {
		return "blob_ref.byteLength must be a non-negative safe integer (§5.9.1)"
	}
	for _, k := range []string{"mediaType", "name"} {
		if raw, ok := vals[k]; ok {
			var str string
			if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &str) != nil {
				return fmt.Sprintf("blob_ref.%s must be a string when present (§5.9.1)", k)
			}
		}
	}
	return ""
}

func blobIDOK(id string) bool {
	if len(id) != 7+64 || id[:7] != "sha256:" {
		return false
	}
	for _, r := range id[7:] {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

// safeLength: a JSON number that, parsed as JavaScript parses it (the
// nearest double), is an integer in [0, 2^53−1] (Number.isSafeInteger).
func safeLength(raw json.RawMessage) bool {
	if len(raw) == 0 || !(raw[0] == '-' || '0' <= raw[0] && raw[0] <= '9') {
		return false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil && !(f == 0) { // an underflow parses to 0, as in JavaScript
		return false
	}
	return f >= 0 && f <= maxSafeInteger && f == math.Trunc(f)
}
