package sqlref

import (
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"

	"github.com/gosync/gosync/internal/fnmigration"
)

// Source is what a canonical file in sql/functions/ says about its function.
type Source struct {
	File    string   // e.g. sync_push.sql
	Header  []string // the leading comment, one entry per line, "-- " stripped
	Body    string   // between AS $$ and $$; (comments stripped)
	Raises  []Raise  // the RAISE EXCEPTION statements of the body, in order
	Example []string // the lines of its "-- Example:" block, "--   " stripped
}

// Raise is one refusal a body raises: its SQLSTATE and message (% marks a
// value filled in at run time).
type Raise struct {
	SQLState, Message string
}

// conditions maps the condition names the canonical bodies use to their
// SQLSTATE; a name outside it fails the generator (add it here).
var conditions = map[string]string{
	"invalid_parameter_value":          "22023",
	"object_not_in_prerequisite_state": "55000",
	"lock_not_available":               "55P03",
	"invalid_transaction_state":        "25000",
	"check_violation":                  "23514",
}

var (
	bodyRE    = regexp.MustCompile(`(?s)\nAS \$\$\n(.*?)\n\$\$;\n`)
	raiseRE   = regexp.MustCompile(`RAISE EXCEPTION\s+'((?:[^']|'')*)'`)
	errcodeRE = regexp.MustCompile(`ERRCODE\s*=\s*'([A-Za-z0-9_]+)'`)
	commentRE = regexp.MustCompile(`--[^\n]*`)
)

// ReadSources parses every canonical file, by function name.
func ReadSources(functions fs.FS) (map[string]Source, error) {
	files, err := fs.Glob(functions, "*.sql")
	if err != nil {
		return nil, err
	}
	out := map[string]Source{}
	for _, f := range files {
		b, err := fs.ReadFile(functions, f)
		if err != nil {
			return nil, err
		}
		s, err := parseSource(f, string(b))
		if err != nil {
			return nil, err
		}
		out[strings.TrimSuffix(f, ".sql")] = s
	}
	return out, nil
}

func parseSource(file, text string) (Source, error) {
	s := Source{File: file}
	lines := strings.Split(text, "\n")
	for _, l := range lines {
		if !strings.HasPrefix(l, "--") {
			break
		}
		s.Header = append(s.Header, strings.TrimPrefix(strings.TrimPrefix(l, "--"), " "))
	}
	m := bodyRE.FindStringSubmatch(text)
	if m == nil {
		return s, fmt.Errorf("sqlref: %s: no body between AS $$ and $$;", file)
	}
	s.Body = commentRE.ReplaceAllString(m[1], "")
	for _, loc := range raiseRE.FindAllStringSubmatchIndex(s.Body, -1) {
		msg := strings.ReplaceAll(s.Body[loc[2]:loc[3]], "''", "'")
		using := statementRest(s.Body[loc[1]:])
		code := "P0001"
		if c := errcodeRE.FindStringSubmatch(using); c != nil {
			var ok bool
			if code, ok = conditions[c[1]]; !ok {
				return s, fmt.Errorf("sqlref: %s: condition %q has no SQLSTATE in sqlref's table", file, c[1])
			}
		}
		s.Raises = append(s.Raises, Raise{SQLState: code, Message: msg})
	}
	in := false
	for _, l := range lines {
		switch {
		case l == "-- Example:":
			in = true
		case in && strings.HasPrefix(l, "--   "):
			s.Example = append(s.Example, strings.TrimPrefix(l, "--   "))
		default:
			in = false
		}
	}
	return s, nil
}

// statementRest is text up to the first semicolon outside a string literal.
func statementRest(text string) string {
	quoted := false
	for i, r := range text {
		switch {
		case r == '\'':
			quoted = !quoted
		case r == ';' && !quoted:
			return text[:i]
		}
	}
	return text
}

// History is where the migrations introduced an object and last replaced it.
type History struct {
	Introduced, LastChanged string // migration file names without .sql
}

var createRE = regexp.MustCompile(`(?m)^\s*CREATE (?:OR REPLACE )?(FUNCTION|TABLE|VIEW|SEQUENCE|TRIGGER)(?: IF NOT EXISTS)? ([a-z_]+)`)

// ReadHistory scans the Up section of every migration for CREATE [OR
// REPLACE] statements, by object name (functions, tables, views, sequences,
// triggers). The upstream tables that sql/adopt/upstream.sql adopts are
// 00001's.
func ReadHistory(migrations fs.FS) (map[string]History, error) {
	files, err := fs.Glob(migrations, "*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	out := map[string]History{}
	for _, f := range files {
		b, err := fs.ReadFile(migrations, f)
		if err != nil {
			return nil, err
		}
		up := commentRE.ReplaceAllString(fnmigration.UpSection(string(b)), "")
		name := strings.TrimSuffix(f, ".sql")
		for _, m := range createRE.FindAllStringSubmatch(up, -1) {
			h := out[m[2]]
			if h.Introduced == "" {
				h.Introduced = name
			}
			h.LastChanged = name
			out[m[2]] = h
		}
	}
	return out, nil
}
