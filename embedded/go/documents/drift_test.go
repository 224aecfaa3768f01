package documents

// Issue 29 item 5: no drift between the Go types and the JSON Schemas the
// binary's contract publishes (embedded/schema, generated from the Rust
// types). For each document: every property of the schema is a field of
// the Go type and every field a property, at every level (a oneOf's
// variants are one Go struct: the union of their properties); every enum
// value of the schema is Valid() for the Go type that has a Valid method.

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
)

type schemaDoc struct {
	root map[string]any
	defs map[string]any
}

func (d schemaDoc) resolve(n map[string]any) map[string]any {
	for i := 0; i < 16; i++ {
		ref, ok := n["$ref"].(string)
		if !ok {
			return n
		}
		def, ok := d.defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
		if !ok {
			return n
		}
		merged := map[string]any{}
		for k, v := range def {
			merged[k] = v
		}
		for k, v := range n {
			if k != "$ref" {
				merged[k] = v
			}
		}
		n = merged
	}
	return n
}

// variants: the node itself, or its non-null anyOf/oneOf/allOf members,
// resolved.
func (d schemaDoc) variants(n map[string]any) []map[string]any {
	n = d.resolve(n)
	var out []map[string]any
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if list, ok := n[k].([]any); ok {
			for _, v := range list {
				m, _ := v.(map[string]any)
				if m == nil || m["type"] == "null" {
					continue
				}
				out = append(out, d.variants(m)...)
			}
		}
	}
	if len(out) == 0 || n["properties"] != nil {
		out = append(out, n)
	}
	return out
}

// properties of an object node (its variants' union); nil when it has none.
func (d schemaDoc) properties(n map[string]any) map[string]map[string]any {
	var props map[string]map[string]any
	for _, v := range d.variants(n) {
		p, ok := v["properties"].(map[string]any)
		if !ok {
			continue
		}
		if props == nil {
			props = map[string]map[string]any{}
		}
		for k, s := range p {
			m, ok := s.(map[string]any)
			if !ok {
				continue
			}
			if old, ok := props[k]; ok {
				// The same key in two variants: either schema.
				m = map[string]any{"anyOf": []any{old, m}}
			}
			props[k] = m
		}
	}
	return props
}

func (d schemaDoc) enum(n map[string]any) []string {
	var out []string
	for _, v := range d.variants(n) {
		if list, ok := v["enum"].([]any); ok {
			for _, e := range list {
				if s, ok := e.(string); ok {
					out = append(out, s)
				}
			}
		}
		if s, ok := v["const"].(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func (d schemaDoc) items(n map[string]any) map[string]any {
	for _, v := range d.variants(n) {
		if m, ok := v["items"].(map[string]any); ok {
			return m
		}
	}
	return nil
}

// jsonFields: the JSON names of a struct's fields, embedded structs
// flattened.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		name := strings.Split(tag, ",")[0]
		if tag == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range jsonFields(ft) {
					out[k] = v
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

var validMethod = "Valid"

// schemaValues, when not nil, collects every enum value the schemas give
// each typed string (over all the places it appears).
var schemaValues map[reflect.Type]map[string]bool

// objectsCompared counts the objects compared (a check that compares
// nothing passes nothing).
var objectsCompared int

func compareType(errorf func(string, ...any), d schemaDoc, path string, n map[string]any, gt reflect.Type, seen map[string]bool) {
	for gt.Kind() == reflect.Pointer {
		gt = gt.Elem()
	}
	key := path + "|" + gt.String()
	if seen[key] {
		return
	}
	seen[key] = true
	switch gt.Kind() {
	case reflect.Slice, reflect.Array:
		if it := d.items(n); it != nil {
			compareType(errorf, d, path+"[]", it, gt.Elem(), seen)
		}
		return
	case reflect.String:
		values := d.enum(n)
		m, ok := reflect.PointerTo(gt).MethodByName(validMethod)
		if len(values) > 1 && !ok {
			// A closed list must be a typed string with Valid (a single
			// const, a format tag, may stay a string).
			errorf("%s: the schema's closed list %v is a %s without Valid", path, values, gt)
		}
		if !ok || len(values) == 0 {
			return
		}
		if schemaValues != nil {
			if schemaValues[gt] == nil {
				schemaValues[gt] = map[string]bool{}
			}
			for _, v := range values {
				schemaValues[gt][v] = true
			}
		}
		for _, v := range values {
			x := reflect.New(gt)
			x.Elem().SetString(v)
			if !m.Func.Call([]reflect.Value{x})[0].Bool() {
				errorf("%s: the schema's value %q is not %s.Valid()", path, v, gt)
			}
		}
		x := reflect.New(gt)
		x.Elem().SetString("no-such-value-in-any-schema")
		if m.Func.Call([]reflect.Value{x})[0].Bool() {
			errorf("%s: %s.Valid() accepts anything", path, gt)
		}
		return
	case reflect.Struct:
	default:
		return
	}
	props := d.properties(n)
	if props == nil {
		return
	}
	objectsCompared++
	fields := jsonFields(gt)
	var missing, extra []string
	for k := range props {
		if _, ok := fields[k]; !ok {
			missing = append(missing, k)
		}
	}
	for k := range fields {
		if _, ok := props[k]; !ok {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		errorf("%s (%s): the schema has %v, the Go type does not", path, gt, missing)
	}
	if len(extra) > 0 {
		errorf("%s (%s): the Go type has %v, the schema does not", path, gt, extra)
	}
	for k, ft := range fields {
		if p, ok := props[k]; ok {
			compareType(errorf, d, path+"."+k, p, ft, seen)
		}
	}
}

func loadSchema(t *testing.T, name string) schemaDoc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "schema", name+".schema.json"))
	if err != nil {
		t.Skipf("outside the repository (no ../../schema): %v", err)
	}
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	defs, _ := root["$defs"].(map[string]any)
	return schemaDoc{root: root, defs: defs}
}

func TestGoTypesMatchTheSchemas(t *testing.T) {
	for _, c := range documentTypes {
		t.Run(c.schema, func(t *testing.T) {
			d := loadSchema(t, c.schema)
			objectsCompared = 0
			compareType(t.Errorf, d, c.schema, d.root, reflect.TypeOf(c.v), map[string]bool{})
			if objectsCompared < c.objects {
				t.Fatalf("only %d objects of the %s schema were compared (at least %d expected)", objectsCompared, c.schema, c.objects)
			}
		})
	}
}

// The check finds a drift: a field renamed, one added, an enum value the
// Go type does not know.
func TestTheDriftCheckFindsADrift(t *testing.T) {
	d := loadSchema(t, "fence")
	type drifted struct {
		FenceResult
		Renamed string `json:"terminationX"`
	}
	var got []string
	errorf := func(f string, a ...any) { got = append(got, f) }
	compareType(errorf, d, "fence", d.root, reflect.TypeOf(drifted{}), map[string]bool{})
	if len(got) != 1 {
		t.Fatalf("one drift expected (an extra field), got %d: %v", len(got), got)
	}
	got = nil
	compareType(errorf, d, "fence", d.root, reflect.TypeOf(CheckResult{}), map[string]bool{})
	if len(got) < 2 {
		t.Fatalf("the check document against the fence schema: %v", got)
	}
	got = nil
	node := map[string]any{"enum": []any{"confirmed", "unconfirmed", "maybe"}}
	compareType(errorf, d, "termination", node, reflect.TypeOf(Termination("")), map[string]bool{})
	if len(got) != 1 {
		t.Fatalf("an enum value the Go type does not know: %v", got)
	}
}

// documentTypes: each schema and the Go type of its document.
var documentTypes = []struct {
	schema  string
	v       any
	objects int // nested objects compared, at least
}{
	{"renew", RenewResult{}, 5},
	{"check", CheckResult{}, 10},
	{"status", StatusResult{}, 20},
	{"fence", FenceResult{}, 4},
	{"version", VersionInfo{}, 1},
	{"help", Help{}, 1},
	{"usage-error", UsageError{}, 1},
	{"receipt", Receipt{}, 2},
	{"phase-v2", PhaseV2{}, 2},
	{"lock-owner", LockOwner{}, 1},
	{"agent-state", AgentStateFile{}, 2},
}

// typedConstants: the package's constants of each named string type, read
// from its source (go/ast): type name -> constant name -> value.
func typedConstants(t *testing.T) map[string]map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, decl := range f.Decls {
				g, ok := decl.(*ast.GenDecl)
				if !ok || g.Tok != token.CONST {
					continue
				}
				for _, spec := range g.Specs {
					vs := spec.(*ast.ValueSpec)
					id, ok := vs.Type.(*ast.Ident)
					if !ok {
						continue
					}
					for i, name := range vs.Names {
						if i >= len(vs.Values) {
							continue
						}
						lit, ok := vs.Values[i].(*ast.BasicLit)
						if !ok || lit.Kind != token.STRING {
							continue
						}
						v, err := strconv.Unquote(lit.Value)
						if err != nil {
							t.Fatal(err)
						}
						if out[id.Name] == nil {
							out[id.Name] = map[string]string{}
						}
						out[id.Name][name.Name] = v
					}
				}
			}
		}
	}
	return out
}

// constantsInSchemas: every typed constant of a type the schemas give enum
// values for is one of those values (the other way, every schema value is
// Valid, is compareType's).
func constantsInSchemas(errorf func(string, ...any), consts map[string]map[string]string, values map[reflect.Type]map[string]bool) int {
	n := 0
	for gt, vals := range values {
		for name, v := range consts[gt.Name()] {
			n++
			if !vals[v] {
				errorf("%s = %q (%s) is in no schema's list for it %v", name, v, gt, keys(vals))
			}
		}
	}
	return n
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Issue 29 item 4: the closed lists are typed constants with Valid, and
// they match the schemas both ways.
func TestTypedConstantsMatchTheSchemas(t *testing.T) {
	schemaValues = map[reflect.Type]map[string]bool{}
	defer func() { schemaValues = nil }()
	for _, c := range documentTypes {
		d := loadSchema(t, c.schema)
		compareType(t.Errorf, d, c.schema, d.root, reflect.TypeOf(c.v), map[string]bool{})
	}
	if len(schemaValues) < 25 {
		t.Fatalf("only %d typed closed lists found in the schemas: %v", len(schemaValues), schemaValues)
	}
	n := constantsInSchemas(t.Errorf, typedConstants(t), schemaValues)
	if n < 100 {
		t.Fatalf("only %d typed constants compared", n)
	}
	t.Logf("%d closed lists, %d typed constants compared", len(schemaValues), n)
}

// The check fails on a drift: a constant no schema knows, and a closed
// list left a plain string.
func TestTheEnumCheckFindsADrift(t *testing.T) {
	var got []string
	errorf := func(f string, a ...any) { got = append(got, fmt.Sprintf(f, a...)) }
	consts := typedConstants(t)
	consts["Severity"]["SeverityBogus"] = "bogus"
	values := map[reflect.Type]map[string]bool{reflect.TypeOf(Severity("")): {"clean": true, "not_clean": true, "action_needed": true, "in_progress": true}}
	constantsInSchemas(errorf, consts, values)
	if len(got) != 1 || !strings.Contains(got[0], "SeverityBogus") {
		t.Fatalf("a constant no schema knows: %q", got)
	}
	got = nil
	d := loadSchema(t, "status")
	type plain struct {
		StatusResult
		Severity string `json:"severity"`
	}
	compareType(errorf, d, "status", d.root, reflect.TypeOf(plain{}), map[string]bool{})
	if len(got) != 1 || !strings.Contains(got[0], "without Valid") {
		t.Fatalf("a closed list as a plain string: %q", got)
	}
}
