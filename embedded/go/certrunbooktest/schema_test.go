package certrunbooktest

// The Node's documents against the contract: each decodes with
// certrunbook's strict decoders and validates against its JSON Schema in
// embedded/schema (a small validator: type, enum, const, properties,
// required, additionalProperties, items, anyOf, oneOf, allOf, pattern,
// minimum, maxLength); the templates are the binary's golden documents.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"nvke.example/certrunbook/documents"
)

type schema struct {
	root map[string]any
	defs map[string]any
}

func loadSchema(t *testing.T, name string) schema {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "schema", name+".schema.json"))
	if err != nil {
		t.Skipf("outside the repository (no embedded/schema): %v", err)
	}
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	defs, _ := root["$defs"].(map[string]any)
	return schema{root, defs}
}

func typeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case json.Number:
		if strings.ContainsAny(x.String(), ".eE") {
			return "number"
		}
		return "integer"
	}
	return fmt.Sprintf("%T", v)
}

// validate returns the first violations of v against node n, at path.
func (s schema) validate(path string, n map[string]any, v any) []string {
	if ref, ok := n["$ref"].(string); ok {
		def, ok := s.defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
		if !ok {
			return []string{path + ": unresolved " + ref}
		}
		if errs := s.validate(path, def, v); len(errs) > 0 {
			return errs
		}
	}
	var errs []string
	fail := func(f string, a ...any) { errs = append(errs, path+": "+fmt.Sprintf(f, a...)) }
	if t, ok := n["type"]; ok {
		got := typeOf(v)
		okType := false
		types := []any{t}
		if l, ok := t.([]any); ok {
			types = l
		}
		for _, x := range types {
			okType = okType || x == got || x == "number" && got == "integer"
		}
		if !okType {
			fail("type %s, want %v", got, t)
			return errs
		}
	}
	if e, ok := n["enum"].([]any); ok {
		found := false
		for _, x := range e {
			found = found || fmt.Sprint(x) == fmt.Sprint(v)
		}
		if !found {
			fail("%v not in %v", v, e)
		}
	}
	if c, ok := n["const"]; ok && fmt.Sprint(c) != fmt.Sprint(v) {
		fail("%v is not %v", v, c)
	}
	if str, ok := v.(string); ok {
		if p, ok := n["pattern"].(string); ok {
			if re, err := regexp.Compile(p); err == nil && !re.MatchString(str) {
				fail("%q does not match %s", str, p)
			}
		}
		if m, ok := n["maxLength"].(float64); ok && len([]rune(str)) > int(m) {
			fail("longer than %v", m)
		}
	}
	if num, ok := v.(json.Number); ok {
		if m, ok := n["minimum"].(float64); ok {
			if f, _ := num.Float64(); f < m {
				fail("%v below %v", num, m)
			}
		}
	}
	if l, ok := n["anyOf"].([]any); ok {
		if why := s.some(path, l, v, false); why != "" {
			fail("matches none of anyOf: %s", why)
		}
	}
	if l, ok := n["oneOf"].([]any); ok {
		if why := s.some(path, l, v, true); why != "" {
			fail("does not match exactly one of oneOf: %s", why)
		}
	}
	if l, ok := n["allOf"].([]any); ok {
		for _, x := range l {
			if m, ok := x.(map[string]any); ok {
				errs = append(errs, s.validate(path, m, v)...)
			}
		}
	}
	if obj, ok := v.(map[string]any); ok {
		props, _ := n["properties"].(map[string]any)
		if req, ok := n["required"].([]any); ok {
			for _, k := range req {
				if _, ok := obj[k.(string)]; !ok {
					fail("required %q missing", k)
				}
			}
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p, ok := props[k].(map[string]any); ok {
				errs = append(errs, s.validate(path+"."+k, p, obj[k])...)
				continue
			}
			switch ap := n["additionalProperties"].(type) {
			case bool:
				if !ap {
					fail("unknown property %q", k)
				}
			case map[string]any:
				errs = append(errs, s.validate(path+"."+k, ap, obj[k])...)
			}
		}
	}
	if arr, ok := v.([]any); ok {
		if it, ok := n["items"].(map[string]any); ok {
			for i, x := range arr {
				errs = append(errs, s.validate(fmt.Sprintf("%s[%d]", path, i), it, x)...)
			}
		}
	}
	return errs
}

// some: "" when v matches some (exactlyOne: exactly one) of l, else why.
func (s schema) some(path string, l []any, v any, exactlyOne bool) string {
	n := 0
	var why []string
	for i, x := range l {
		if m, ok := x.(map[string]any); ok {
			errs := s.validate(path, m, v)
			if len(errs) == 0 {
				n++
			} else {
				why = append(why, fmt.Sprintf("[%d] %s", i, errs[0]))
			}
		}
	}
	if n == 1 || n > 1 && !exactlyOne {
		return ""
	}
	if n > 1 {
		return fmt.Sprintf("%d variants match", n)
	}
	return "{" + strings.Join(why, "; ") + "}"
}

func checkDoc(t *testing.T, name, doc string) {
	t.Helper()
	s := loadSchema(t, name)
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if errs := s.validate(name, s.root, v); len(errs) > 0 {
		t.Errorf("%s document breaks its schema:\n  %s\n%s", name, strings.Join(errs, "\n  "), doc)
	}
}

// Every document the Node prints, in every situation.
func TestDocumentsMatchTheSchemas(t *testing.T) {
	id := "cycle-1@cp-1"
	etcd := documents.ComponentEtcd
	var renews []*documents.RenewResult
	for _, o := range []documents.Outcome{documents.OutcomeRenewed, documents.OutcomeUnchanged, documents.OutcomeFailed, documents.OutcomeCancelled} {
		d := RenewDoc(id, o, documents.PhaseDone, nil)
		if o == documents.OutcomeFailed {
			d = RenewDoc(id, o, documents.PhaseRestart(etcd), &etcd)
		}
		rec := d.Receipt
		d.Receipt = nil
		renews = append(renews, d, ReplayDoc(rec))
		checkDoc(t, "receipt", jsonLine(rec))
		if _, err := documents.DecodeReceipt([]byte(jsonLine(rec))); err != nil {
			t.Errorf("receipt %s: %v", o, err)
		}
	}
	renews = append(renews, LockTimeoutDoc(id), ReplayDoc(ReceiptDoc(id, documents.OutcomeAbandoned, documents.PhaseLock, "abandoned")))
	for _, d := range renews {
		doc := JSON(d)
		checkDoc(t, "renew", doc)
		if _, err := documents.DecodeRenew([]byte(doc)); err != nil {
			t.Errorf("DecodeRenew: %v\n%s", err, doc)
		}
	}
	rec := ReceiptDoc(id, documents.OutcomeFailed, documents.PhaseHealth, "failed")
	for _, f := range []*documents.FenceResult{
		FenceDoc(id, documents.FenceReasonReceipt, rec),
		FenceDoc(id, documents.FenceReasonAbandoned, ReceiptDoc(id, documents.OutcomeAbandoned, documents.PhaseLock, "abandoned")),
		FenceDoc(id, documents.FenceReasonLockTimeout, nil),
	} {
		doc := jsonLine(f)
		checkDoc(t, "fence", doc)
		if _, err := documents.DecodeFence([]byte(doc)); err != nil {
			t.Errorf("DecodeFence: %v\n%s", err, doc)
		}
	}
	for _, c := range []*documents.CheckResult{
		CheckDoc(documents.DecisionUnchanged, nil, false),
		CheckDoc(documents.DecisionRenew, []documents.ExecutorKind{documents.ExecutorTyped}, true),
		CheckDoc(documents.DecisionFailed, nil, false),
	} {
		doc := jsonLine(c)
		checkDoc(t, "check", doc)
		if _, err := documents.DecodeCheck([]byte(doc)); err != nil {
			t.Errorf("DecodeCheck: %v", err)
		}
	}
	for _, s := range []*documents.StatusResult{StatusDoc("", nil, true), StatusDoc(id, rec, false), StatusDoc(id, nil, true)} {
		doc := jsonLine(s)
		checkDoc(t, "status", doc)
		if _, err := documents.DecodeStatus([]byte(doc)); err != nil {
			t.Errorf("DecodeStatus: %v", err)
		}
	}
	checkDoc(t, "version", VersionDoc())
	if _, err := documents.DecodeVersion([]byte(VersionDoc())); err != nil {
		t.Error(err)
	}
	u := jsonLine(UsageErrorDoc("no mode given"))
	checkDoc(t, "usage-error", u)
}

// The validator finds a broken document (a check that cannot fail proves
// nothing).
func TestTheValidatorFindsBreaks(t *testing.T) {
	s := loadSchema(t, "fence")
	good := jsonLine(FenceDoc("x", documents.FenceReasonLockTimeout, nil))
	for _, bad := range []string{
		strings.Replace(good, `"reason":"lock-timeout"`, `"reason":"maybe"`, 1),
		strings.Replace(good, `"fence":true,`, ``, 1),
		strings.Replace(good, `"fence":true`, `"fence":true,"extra":1`, 1),
		strings.Replace(good, `"exitCode":3`, `"exitCode":"3"`, 1),
	} {
		if bad == good {
			t.Fatalf("the mutation did not apply to %s", good)
		}
		dec := json.NewDecoder(strings.NewReader(bad))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		if errs := s.validate("fence", s.root, v); len(errs) == 0 {
			t.Errorf("no violation found in %s", bad)
		}
	}
}

// The templates are the binary's golden documents, byte for byte.
func TestTemplatesAreTheGoldens(t *testing.T) {
	for tmpl, golden := range map[string]string{"check.json": "check-clean-unchanged", "status.json": "status-asked-receipt-confirm"} {
		g, err := os.ReadFile(filepath.Join("..", "..", "..", "tests", "golden", golden, "stdout"))
		if err != nil {
			t.Skipf("outside the repository (no tests/golden): %v", err)
		}
		mine, err := os.ReadFile(tmpl)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(g, mine) {
			t.Errorf("certrunbooktest/%s differs from tests/golden/%s/stdout: copy it again", tmpl, golden)
		}
	}
}

// The validator accepts the binary's own documents (so what it refuses in
// the kit's is the kit's fault).
func TestTheValidatorAcceptsTheGoldens(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "tests", "golden")
	n := 0
	for prefix, name := range map[string]string{"renew-": "renew", "fence-": "fence", "check-": "check", "status-": "status"} {
		matches, _ := filepath.Glob(filepath.Join(dir, prefix+"*", "stdout"))
		for _, m := range matches {
			b, err := os.ReadFile(m)
			if err != nil || !bytes.HasPrefix(b, []byte("{")) {
				continue
			}
			args, _ := os.ReadFile(filepath.Join(filepath.Dir(m), "args"))
			if !bytes.Contains(args, []byte("json")) && name != "renew" && name != "fence" {
				continue
			}
			if k, err := documents.Classify(b); err != nil || string(k) != name {
				continue
			}
			if bytes.Contains(b, []byte(`"[HOLDER]"`)) || bytes.Contains(b, []byte(`"[masked]"`)) {
				continue // a pid the golden test replaced by a placeholder
			}
			n++
			checkDoc(t, name, string(b))
		}
	}
	if n < 20 {
		t.Skipf("only %d golden documents found (outside the repository?)", n)
	}
	t.Logf("%d golden documents validated", n)
}
