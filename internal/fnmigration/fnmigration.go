// Package fnmigration writes a goose migration that installs functions from
// their canonical files (sql/functions/*.sql) and a Down that undoes it
// exactly: a new function is dropped; an existing one gets back the
// definition of the latest earlier migration that defined it, with the
// SECURITY DEFINER, search_path, grants and comment the earlier migrations
// left it with. scripts/function-migration.sh is its entry point.
//
// The previous state is read from the migrations' Up sections in order:
// CREATE OR REPLACE FUNCTION (plain, or inside EXECUTE replace($fn$...$fn$,
// '@extschema@', ...)), DROP FUNCTION, ALTER FUNCTION ... SECURITY
// DEFINER|INVOKER / SET|RESET search_path, GRANT/REVOKE ... ON FUNCTION and
// COMMENT ON FUNCTION, by name or as format('... %s ...', f) in a DO loop over
// an ARRAY of signatures or over every function of the schema (00006,
// 00007). A statement on a function it cannot follow is an error, never a
// guess.
package fnmigration

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// roles are the grantees a migration's REVOKE ALL clears before it grants.
var roles = []string{"PUBLIC", "sync_reader", "sync_writer", "sync_backfill", "sync_admin"}

// state is one function as the migrations so far left it.
type state struct {
	name       string
	definition string // CREATE OR REPLACE FUNCTION ... ; (may hold @extschema@)
	from       string // the migration file that defined it
	secdef     bool
	searchPath bool            // search_path = pg_catalog, <schema>, pg_temp
	grants     map[string]bool // EXECUTE grantees (PUBLIC as "PUBLIC")
	comment    *string         // the literal as written ('...' or $$...$$), nil: none
}

var (
	reCreate     = regexp.MustCompile(`CREATE OR REPLACE FUNCTION\s+([a-z_][a-z0-9_]*)\s*\(`)
	reDrop       = regexp.MustCompile(`(?i)\bDROP FUNCTION\s+(?:IF EXISTS\s+)?([a-z_][a-z0-9_]*)\b`)
	reAlter      = regexp.MustCompile(`ALTER FUNCTION\s+([a-z_][a-z0-9_]*)\s*\([^)]*\)\s+(SECURITY DEFINER|SECURITY INVOKER|SET search_path|RESET search_path|RESET ALL)`)
	reGrant      = regexp.MustCompile(`(?s)\b(GRANT|REVOKE)\s+(?:EXECUTE|ALL)(?:\s+PRIVILEGES)?\s+ON\s+FUNCTION\s+(.*?)\s+(TO|FROM)\s+([A-Za-z_, \n]+?)\s*(?:;|')`)
	reComment    = regexp.MustCompile(`COMMENT ON FUNCTION\s+([a-z_][a-z0-9_]*)\s*\([^)]*\)\s+IS\s+`)
	reName       = regexp.MustCompile(`([a-z_][a-z0-9_]*)\s*\(`)
	reDollar     = regexp.MustCompile(`\$[A-Za-z_]*\$`)
	reDoBlock    = regexp.MustCompile(`\bDO\s+(\$[A-Za-z_]*\$)`)
	reLoopStmt   = regexp.MustCompile(`format\('(REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC|GRANT EXECUTE ON FUNCTION %s TO PUBLIC|ALTER FUNCTION %s SET search_path|ALTER FUNCTION %s RESET search_path|ALTER FUNCTION %s SECURITY DEFINER|ALTER FUNCTION %s SECURITY INVOKER)`)
	reQuotedSig  = regexp.MustCompile(`'([a-z_][a-z0-9_]*)\(`)
	reQuotedName = regexp.MustCompile(`'([a-z_][a-z0-9_]*)'`)
)

// history replays the Up sections of the migrations in dir, in order.
type history struct {
	fns map[string]*state
}

// event is one statement of a migration's Up at its offset.
type event struct {
	at    int
	apply func(h *history) error
}

// UpSection is a goose migration's Up: from its `-- +goose Up` line to its
// `-- +goose Down` line (or the end); "" without an Up.
func UpSection(text string) string {
	up := strings.Index(text, "-- +goose Up")
	down := strings.Index(text, "-- +goose Down")
	if up < 0 {
		return ""
	}
	if down < 0 || down < up {
		return text[up:]
	}
	return text[up:down]
}

// definitionAt returns the CREATE OR REPLACE FUNCTION statement starting at
// i: through the end of its dollar-quoted body and the semicolon after it.
func definitionAt(text string, i int) (string, error) {
	as := regexp.MustCompile(`\bAS\s+`).FindStringIndex(text[i:])
	if as == nil {
		return "", fmt.Errorf("no AS after offset %d", i)
	}
	open := reDollar.FindStringIndex(text[i+as[1]:])
	if open == nil || open[0] != 0 {
		return "", fmt.Errorf("body at offset %d is not dollar-quoted", i)
	}
	tag := text[i+as[1] : i+as[1]+open[1]]
	bodyStart := i + as[1] + open[1]
	end := strings.Index(text[bodyStart:], tag)
	if end < 0 {
		return "", fmt.Errorf("body at offset %d does not end", i)
	}
	rest := bodyStart + end + len(tag)
	semi := strings.IndexByte(text[rest:], ';')
	if semi < 0 {
		return "", fmt.Errorf("no ; after the body at offset %d", i)
	}
	return text[i : rest+semi+1], nil
}

// header is a definition up to its AS (where SET and SECURITY are written).
func header(def string) string {
	if loc := regexp.MustCompile(`\bAS\s+\$`).FindStringIndex(def); loc != nil {
		return def[:loc[0]]
	}
	return def
}

// literalAt returns the string literal ('...' with ” escapes, or $tag$...$tag$)
// starting at i, or NULL.
func literalAt(text string, i int) (string, error) {
	rest := text[i:]
	switch {
	case strings.HasPrefix(rest, "NULL"):
		return "NULL", nil
	case strings.HasPrefix(rest, "'") || strings.HasPrefix(rest, "E'"):
		j := strings.IndexByte(rest, '\'') + 1
		for j < len(rest) {
			if rest[j] == '\'' {
				if j+1 < len(rest) && rest[j+1] == '\'' {
					j += 2
					continue
				}
				return rest[:j+1], nil
			}
			j++
		}
	case reDollar.MatchString(rest) && reDollar.FindStringIndex(rest)[0] == 0:
		tag := reDollar.FindString(rest)
		if end := strings.Index(rest[len(tag):], tag); end >= 0 {
			return rest[:len(tag)+end+len(tag)], nil
		}
	}
	return "", fmt.Errorf("comment at offset %d is not NULL or a plain literal", i)
}

func (h *history) fn(name, file string) (*state, error) {
	s, ok := h.fns[name]
	if !ok {
		return nil, fmt.Errorf("%s: statement on %s before any migration created it", file, name)
	}
	return s, nil
}

// events lists what one migration's Up does to functions, in order.
func events(file, up string) ([]event, error) {
	var evs []event
	for _, m := range reCreate.FindAllStringSubmatchIndex(up, -1) {
		name := up[m[2]:m[3]]
		def, err := definitionAt(up, m[0])
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", file, name, err)
		}
		hd := header(def)
		evs = append(evs, event{m[0], func(h *history) error {
			s, ok := h.fns[name]
			if !ok {
				s = &state{name: name, grants: map[string]bool{"PUBLIC": true}}
				h.fns[name] = s
			}
			s.definition, s.from = def, filepath.Base(file)
			// CREATE OR REPLACE resets SECURITY and SET to what it says;
			// it keeps grants and the comment.
			s.secdef = strings.Contains(hd, "SECURITY DEFINER")
			s.searchPath = strings.Contains(hd, "SET search_path")
			return nil
		}})
	}
	for _, m := range reDrop.FindAllStringSubmatchIndex(up, -1) {
		name := up[m[2]:m[3]]
		evs = append(evs, event{m[0], func(h *history) error { delete(h.fns, name); return nil }})
	}
	for _, m := range reAlter.FindAllStringSubmatchIndex(up, -1) {
		name, what := up[m[2]:m[3]], up[m[4]:m[5]]
		evs = append(evs, event{m[0], func(h *history) error {
			s, err := h.fn(name, file)
			if err != nil {
				return err
			}
			s.alter(what)
			return nil
		}})
	}
	for _, m := range reGrant.FindAllStringSubmatchIndex(up, -1) {
		verb, list, who := up[m[2]:m[3]], up[m[4]:m[5]], up[m[8]:m[9]]
		if strings.Contains(list, "%s") {
			continue // a loop's statement: see loops below
		}
		var names []string
		for _, n := range reName.FindAllStringSubmatch(list, -1) {
			names = append(names, n[1])
		}
		grantees := splitRoles(who)
		evs = append(evs, event{m[0], func(h *history) error {
			for _, name := range names {
				s, err := h.fn(name, file)
				if err != nil {
					return err
				}
				for _, g := range grantees {
					s.grants[g] = verb == "GRANT"
				}
			}
			return nil
		}})
	}
	for _, m := range reComment.FindAllStringSubmatchIndex(up, -1) {
		name := up[m[2]:m[3]]
		lit, err := literalAt(up, m[1])
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", file, name, err)
		}
		evs = append(evs, event{m[0], func(h *history) error {
			s, err := h.fn(name, file)
			if err != nil {
				return err
			}
			if lit == "NULL" {
				s.comment = nil
			} else {
				s.comment = &lit
			}
			return nil
		}})
	}
	// A statement on functions none of the forms above reads would leave
	// the Down guessing: refuse it.
	if n := strings.Count(up, "ALTER FUNCTION"); n != len(reAlter.FindAllStringIndex(up, -1))+countLoop(up, "ALTER FUNCTION %s") {
		return nil, fmt.Errorf("%s: an ALTER FUNCTION the generator cannot follow (it reads SECURITY DEFINER|INVOKER and SET|RESET search_path, by name or in a loop)", file)
	}
	if n := strings.Count(up, "ON FUNCTION %s") + strings.Count(up, "ALTER FUNCTION %s"); n != len(reLoopStmt.FindAllStringIndex(up, -1)) {
		return nil, fmt.Errorf("%s: a format('... FUNCTION %%s ...') statement the generator cannot follow", file)
	}
	if n := strings.Count(up, "COMMENT ON FUNCTION"); n != len(reComment.FindAllStringIndex(up, -1)) {
		return nil, fmt.Errorf("%s: a COMMENT ON FUNCTION the generator cannot follow (write it by name: COMMENT ON FUNCTION f(args) IS '...')", file)
	}
	loops, err := loopEvents(file, up)
	if err != nil {
		return nil, err
	}
	evs = append(evs, loops...)
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at < evs[j].at })
	return evs, nil
}

func countLoop(up, prefix string) int {
	n := 0
	for _, m := range reLoopStmt.FindAllStringSubmatch(up, -1) {
		if strings.HasPrefix(m[1], prefix) {
			n++
		}
	}
	return n
}

func splitRoles(who string) []string {
	var out []string
	for _, r := range strings.Split(who, ",") {
		if r = strings.TrimSpace(r); r != "" {
			if strings.EqualFold(r, "public") {
				r = "PUBLIC"
			}
			out = append(out, r)
		}
	}
	return out
}

func (s *state) alter(what string) {
	switch what {
	case "SECURITY DEFINER":
		s.secdef = true
	case "SECURITY INVOKER":
		s.secdef = false
	case "SET search_path":
		s.searchPath = true
	case "RESET search_path", "RESET ALL":
		s.searchPath = false
	}
}

// loopEvents interprets the DO blocks that apply format('... %s ...', f)
// to a list of functions: FOREACH over an ARRAY of signatures, or FOR over
// every function of the schema, with the IF conditions 00006 and 00007 use
// (f::text NOT LIKE 'name(%', split_part(f::text, '(', 1) IN (...) or
// = ANY (an array variable)), ELSE and END IF.
func loopEvents(file, up string) ([]event, error) {
	var evs []event
	for _, m := range reDoBlock.FindAllStringSubmatchIndex(up, -1) {
		tag := up[m[2]:m[3]]
		end := strings.Index(up[m[1]:], tag)
		if end < 0 {
			return nil, fmt.Errorf("%s: DO block at offset %d does not end", file, m[0])
		}
		block := up[m[1] : m[1]+end]
		if !reLoopStmt.MatchString(block) {
			continue
		}
		ev, err := loopEvent(file, block)
		if err != nil {
			return nil, err
		}
		evs = append(evs, event{m[0], ev})
	}
	return evs, nil
}

// cond tells whether a statement in a loop applies to the function named.
type cond func(name string) bool

func loopEvent(file, block string) (func(h *history) error, error) {
	arrays := map[string][]string{} // name text[] := ARRAY['a', 'b']
	for _, m := range regexp.MustCompile(`(?s)([a-z_]+)\s+text\[\]\s*:=\s*ARRAY\[(.*?)\]`).FindAllStringSubmatch(block, -1) {
		for _, q := range reQuotedName.FindAllStringSubmatch(m[2], -1) {
			arrays[m[1]] = append(arrays[m[1]], q[1])
		}
	}
	all := strings.Contains(block, "FROM pg_proc")
	var targets []string
	if !all {
		loc := regexp.MustCompile(`(?s)FOREACH\s+\w+\s+IN\s+ARRAY\s+ARRAY\[(.*?)\](?:::[a-z\[\]]+)?\s+LOOP`).FindStringSubmatch(block)
		if loc == nil {
			return nil, fmt.Errorf("%s: a DO block applies format(... %%s ...) to functions it does not list", file)
		}
		for _, q := range reQuotedSig.FindAllStringSubmatch(loc[1], -1) {
			targets = append(targets, q[1])
		}
	}
	body := block
	if i := strings.Index(block, "LOOP"); i >= 0 {
		body = block[i:]
	}
	type step struct {
		when cond
		what string
	}
	var steps []step
	var stack []cond
	reIf := regexp.MustCompile(`(?s)^\s*IF\s+(.*?)\s+THEN`)
	lines := strings.Split(body, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		switch {
		case strings.HasPrefix(line, "IF "):
			text := line
			for !strings.Contains(text, " THEN") && i+1 < len(lines) {
				i++
				text += " " + strings.TrimSpace(lines[i])
			}
			m := reIf.FindStringSubmatch(text)
			if m == nil {
				return nil, fmt.Errorf("%s: cannot read %q", file, text)
			}
			c, err := parseCond(m[1], arrays)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			stack = append(stack, c)
		case line == "ELSE":
			if len(stack) == 0 {
				return nil, fmt.Errorf("%s: ELSE outside IF", file)
			}
			c := stack[len(stack)-1]
			stack[len(stack)-1] = func(n string) bool { return !c(n) }
		case strings.HasPrefix(line, "END IF"):
			if len(stack) == 0 {
				return nil, fmt.Errorf("%s: END IF outside IF", file)
			}
			stack = stack[:len(stack)-1]
		default:
			if m := reLoopStmt.FindStringSubmatch(line); m != nil {
				conds := append([]cond(nil), stack...)
				steps = append(steps, step{func(n string) bool {
					for _, c := range conds {
						if !c(n) {
							return false
						}
					}
					return true
				}, m[1]})
			} else if strings.Contains(line, "%s") && strings.Contains(line, "FUNCTION") {
				return nil, fmt.Errorf("%s: cannot follow %q", file, line)
			}
		}
	}
	return func(h *history) error {
		names := targets
		if all {
			names = nil
			for n := range h.fns {
				names = append(names, n)
			}
		}
		for _, n := range names {
			s, err := h.fn(n, file)
			if err != nil {
				return err
			}
			for _, st := range steps {
				if !st.when(n) {
					continue
				}
				switch st.what {
				case "REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC":
					s.grants["PUBLIC"] = false
				case "GRANT EXECUTE ON FUNCTION %s TO PUBLIC":
					s.grants["PUBLIC"] = true
				default:
					s.alter(strings.TrimPrefix(st.what, "ALTER FUNCTION %s "))
				}
			}
		}
		return nil
	}, nil
}

func parseCond(text string, arrays map[string][]string) (cond, error) {
	if m := regexp.MustCompile(`^f::text NOT LIKE '([a-z_0-9]+)\(%'$`).FindStringSubmatch(text); m != nil {
		return func(n string) bool { return n != m[1] }, nil
	}
	if m := regexp.MustCompile(`^split_part\(f::text, '\(', 1\) IN \((.*)\)$`).FindStringSubmatch(text); m != nil {
		set := map[string]bool{}
		for _, q := range reQuotedName.FindAllStringSubmatch(m[1], -1) {
			set[q[1]] = true
		}
		return func(n string) bool { return set[n] }, nil
	}
	if m := regexp.MustCompile(`^split_part\(f::text, '\(', 1\) = ANY \(([a-z_]+)\)$`).FindStringSubmatch(text); m != nil {
		list, ok := arrays[m[1]]
		if !ok {
			return nil, fmt.Errorf("no array %s", m[1])
		}
		set := map[string]bool{}
		for _, n := range list {
			set[n] = true
		}
		return func(n string) bool { return set[n] }, nil
	}
	return nil, fmt.Errorf("cannot read the condition %q", text)
}

// Replay reads the migrations in dir (000NN_*.sql, in order) and returns
// every function as their Up sections leave it.
func Replay(dir string) (map[string]*state, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	h := &history{fns: map[string]*state{}}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		evs, err := events(filepath.Base(f), UpSection(string(b)))
		if err != nil {
			return nil, err
		}
		for _, e := range evs {
			if err := e.apply(h); err != nil {
				return nil, err
			}
		}
	}
	return h.fns, nil
}

// canonical is one function file of sql/functions.
type canonical struct {
	name, text, signature string // text: from CREATE OR REPLACE FUNCTION on
}

func readCanonical(path string) (canonical, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return canonical{}, err
	}
	text := string(b)
	loc := regexp.MustCompile(`(?m)^CREATE OR REPLACE FUNCTION`).FindStringIndex(text)
	if loc == nil {
		return canonical{}, fmt.Errorf("%s: no CREATE OR REPLACE FUNCTION line", path)
	}
	text = text[loc[0]:]
	name := reCreate.FindStringSubmatch(text)[1]
	sig := regexp.MustCompile(`(?m)^REVOKE ALL ON FUNCTION (` + name + `\([^)]*\)) FROM `).FindStringSubmatch(text)
	if sig == nil {
		return canonical{}, fmt.Errorf("%s has no REVOKE ALL ON FUNCTION %s(...) line", path, name)
	}
	if strings.Contains(text, "$fn$") {
		return canonical{}, fmt.Errorf("%s uses $fn$, the quote the migration wraps it in", path)
	}
	return canonical{name: name, text: strings.TrimRight(text, "\n"), signature: sig[1]}, nil
}

// identity is a definition's argument types, as ALTER FUNCTION names it.
func identity(def string) string {
	open := strings.IndexByte(def, '(')
	depth, end := 0, -1
	for i := open; i < len(def) && end < 0; i++ {
		switch def[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				end = i
			}
		}
	}
	if open < 0 || end < 0 {
		return ""
	}
	var types []string
	for _, p := range splitTop(def[open+1 : end]) {
		p = strings.TrimSpace(regexp.MustCompile(`(?is)\s+(DEFAULT\s+|=\s*).*$`).ReplaceAllString(p, ""))
		if p == "" {
			continue
		}
		f := strings.Fields(p)
		switch strings.ToUpper(f[0]) {
		case "OUT":
			continue
		case "IN", "INOUT", "VARIADIC":
			f = f[1:]
		}
		if len(f) > 1 {
			f = f[1:] // the argument's name
		}
		types = append(types, strings.Join(f, " "))
	}
	return strings.Join(types, ", ")
}

func splitTop(s string) []string {
	var out []string
	depth, last := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[last:i])
				last = i + 1
			}
		}
	}
	return append(out, s[last:])
}

func returns(def string) string {
	m := regexp.MustCompile(`(?is)\)\s*RETURNS\s+(.*?)\s+(LANGUAGE|AS|IMMUTABLE|STABLE|VOLATILE|ROWS|SET|SECURITY|STRICT|PARALLEL|COST)\b`).FindStringSubmatch(def)
	if m == nil {
		return ""
	}
	return strings.ToLower(strings.Join(strings.Fields(m[1]), " "))
}

func normSig(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, ",", ", ")), " ")
}

const (
	wrapOpen  = "DO $do$ BEGIN EXECUTE replace($fn$\n"
	wrapClose = "\n$fn$, '@extschema@', quote_ident(current_schema())); END $do$;"
)

func block(b *strings.Builder, sql string) {
	b.WriteString("-- +goose StatementBegin\n" + wrapOpen + sql + wrapClose + "\n-- +goose StatementEnd\n\n")
}

// restore is the SQL that gives the function back its state s under the
// signature sig: its definition, then what CREATE OR REPLACE resets
// (SECURITY, search_path) and what the replacing migration changed (grants,
// comment).
func restore(s *state, sig string) string {
	var b strings.Builder
	b.WriteString(s.definition + "\n")
	if s.secdef {
		fmt.Fprintf(&b, "ALTER FUNCTION %s SECURITY DEFINER;\n", sig)
	} else {
		fmt.Fprintf(&b, "ALTER FUNCTION %s SECURITY INVOKER;\n", sig)
	}
	if s.searchPath {
		fmt.Fprintf(&b, "ALTER FUNCTION %s SET search_path = pg_catalog, @extschema@, pg_temp;\n", sig)
	} else {
		fmt.Fprintf(&b, "ALTER FUNCTION %s RESET search_path;\n", sig)
	}
	fmt.Fprintf(&b, "REVOKE ALL ON FUNCTION %s FROM %s;\n", sig, strings.Join(roles, ", "))
	var to []string
	for _, r := range roles {
		if s.grants[r] {
			to = append(to, r)
		}
	}
	var extra []string
	for r, ok := range s.grants {
		if ok && !contains(roles, r) {
			extra = append(extra, r)
		}
	}
	sort.Strings(extra)
	if to = append(to, extra...); len(to) > 0 {
		fmt.Fprintf(&b, "GRANT EXECUTE ON FUNCTION %s TO %s;\n", sig, strings.Join(to, ", "))
	}
	comment := "NULL"
	if s.comment != nil {
		comment = *s.comment
	}
	fmt.Fprintf(&b, "COMMENT ON FUNCTION %s IS %s;", sig, comment)
	return b.String()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Generate prints the migration: desc as its header, Up installing each
// canonical file whole (in the order given), Down undoing it in reverse.
// migrations is the directory of the existing migrations.
func Generate(desc, migrations string, files []string) (string, error) {
	prev, err := Replay(migrations)
	if err != nil {
		return "", err
	}
	var fns []canonical
	for _, f := range files {
		c, err := readCanonical(f)
		if err != nil {
			return "", err
		}
		fns = append(fns, c)
	}
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(desc), "\n") {
		b.WriteString(strings.TrimRight("-- "+line, " ") + "\n")
	}
	b.WriteString("-- Function definitions are verbatim copies of sql/functions/*.sql as of\n")
	b.WriteString("-- this migration; the Down restores the definition (and SECURITY,\n")
	b.WriteString("-- search_path, grants, comment) each function had before, or drops a\n")
	b.WriteString("-- new one (generated by scripts/function-migration.sh).\n")
	for _, c := range fns {
		if s, ok := prev[c.name]; ok {
			fmt.Fprintf(&b, "--   %s: replaced; Down restores %s's definition\n", c.name, s.from)
		} else {
			fmt.Fprintf(&b, "--   %s: new\n", c.name)
		}
	}
	b.WriteString("\n-- +goose Up\n")
	for _, c := range fns {
		if s, ok := prev[c.name]; ok && changedShape(s.definition, c.text) {
			// CREATE OR REPLACE cannot change arguments or result type.
			fmt.Fprintf(&b, "DROP FUNCTION %s(%s);\n", c.name, identity(s.definition))
		}
		block(&b, c.text)
	}
	b.WriteString("SELECT sync_record_installed_catalog();\n\n-- +goose Down\n")
	for i := len(fns) - 1; i >= 0; i-- {
		c := fns[i]
		s, ok := prev[c.name]
		if !ok {
			fmt.Fprintf(&b, "DROP FUNCTION %s;\n", c.signature)
			continue
		}
		if changedShape(s.definition, c.text) {
			fmt.Fprintf(&b, "DROP FUNCTION %s;\n", c.signature)
		}
		fmt.Fprintf(&b, "-- %s as %s defined it\n", c.name, s.from)
		block(&b, restore(s, fmt.Sprintf("%s(%s)", c.name, identity(s.definition))))
	}
	b.WriteString("SELECT sync_record_installed_catalog();\n")
	return b.String(), nil
}

func changedShape(old, canonical string) bool {
	return normSig(identity(old)) != normSig(identity(canonical)) || returns(old) != returns(canonical)
}
