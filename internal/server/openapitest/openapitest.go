// Package openapitest checks the JSON spider prints (API answers, the
// command line's --json outputs, files written for users) against the
// schemas of an OpenAPI 3 document (internal/server/openapi.json) and
// against the one JSON style of issue 20:
//
//   - every key of an object whose schema lists "properties" is declared
//     there and is snake_case ([a-z][a-z0-9]*(_[a-z0-9]+)*);
//   - a duration is a number in a key ending in _ms: a key ending in _ms
//     holds a number, and a key that names a duration in another way (took,
//     elapsed, *_ns, *_s, *_seconds, …) or a string value that reads as a
//     Go duration ("1m30s") is an error;
//   - a string the schema declares "format": "date-time" is RFC 3339;
//   - null only where the schema says "nullable": true;
//   - values have the schema's types (integer, number, string, boolean,
//     array, object).
//
// Objects declared with "additionalProperties" (maps) have data as keys:
// those keys are not checked, their values are, against that schema. It is
// a structural check written for these tests, not a full JSON Schema
// validator: $ref (to #/components/...), type, properties, required,
// additionalProperties, items, allOf, nullable, enum and format are
// understood.
package openapitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Doc is a parsed OpenAPI document.
type Doc struct {
	root map[string]any
}

// Parse reads an OpenAPI 3 JSON document.
func Parse(doc []byte) (*Doc, error) {
	var root map[string]any
	if err := json.Unmarshal(doc, &root); err != nil {
		return nil, fmt.Errorf("cannot parse the OpenAPI document: %w", err)
	}
	return &Doc{root: root}, nil
}

// Schemas lists the names under components/schemas.
func (d *Doc) Schemas() []string {
	m, _ := d.lookup("#/components/schemas").(map[string]any)
	var names []string
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Schema returns components/schemas/name, or nil.
func (d *Doc) Schema(name string) map[string]any {
	s, _ := d.lookup("#/components/schemas/" + name).(map[string]any)
	return s
}

// ResponseSchema returns the application/json schema of the answer with
// status code to method path (e.g. "get", "/api/search", 200): nil when
// the document declares none.
func (d *Doc) ResponseSchema(method, path string, code int) map[string]any {
	op, _ := d.lookup("#/paths/" + escape(path) + "/" + strings.ToLower(method)).(map[string]any)
	resps, _ := op["responses"].(map[string]any)
	resp, _ := d.resolve(resps[fmt.Sprint(code)]).(map[string]any)
	content, _ := resp["content"].(map[string]any)
	media, _ := content["application/json"].(map[string]any)
	s, _ := d.resolve(media["schema"]).(map[string]any)
	return s
}

// escape is a path as a JSON pointer token.
func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// lookup follows a local JSON pointer ("#/a/b").
func (d *Doc) lookup(ref string) any {
	var v any = d.root
	for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[tok]
	}
	return v
}

// resolve follows $ref until it reaches a value without one.
func (d *Doc) resolve(v any) any {
	for i := 0; i < 16; i++ {
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return v
		}
		v = d.lookup(ref)
	}
	return nil
}

// Check checks body (one JSON value) against components/schemas/name.
func (d *Doc) Check(name string, body []byte) error {
	s := d.Schema(name)
	if s == nil {
		return fmt.Errorf("openapi.json has no components/schemas/%s", name)
	}
	return d.CheckSchema(s, body)
}

// CheckSchema checks body (one JSON value) against schema s; the error
// joins one error per problem, each naming the JSON path.
func (d *Doc) CheckSchema(s map[string]any, body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	var errs []error
	d.check(&errs, "$", "", v, s)
	return errors.Join(errs...)
}

// CheckStyle checks body (one JSON value) for the style alone, with no
// schema: every object key snake_case, durations in _ms numbers. For
// outputs the OpenAPI document does not declare (benchmark tools).
func CheckStyle(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	var errs []error
	styleWalk(&errs, "$", "", v)
	return errors.Join(errs...)
}

func styleWalk(errs *[]error, path, key string, v any) {
	styleValue(errs, path, key, v)
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			p := path + "." + k
			if err := KeyStyle(k); err != nil {
				*errs = append(*errs, fmt.Errorf("%s: %w", p, err))
			}
			styleWalk(errs, p, k, e)
		}
	case []any:
		for i, e := range v {
			styleWalk(errs, fmt.Sprintf("%s[%d]", path, i), "", e)
		}
	}
}

var (
	snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)
	// goDuration is a time.Duration's String(): "1m30s", "1.5s", "250ms".
	goDuration = regexp.MustCompile(`^-?([0-9]+(\.[0-9]+)?(h|m|s|ms|us|µs|ns))+$`)
	// durationWords are key names (or their last word) that name a
	// duration without saying its unit in the _ms way.
	durationWords = []string{"took", "elapsed", "duration", "latency", "ago", "period", "delay", "timeout", "interval", "wait", "age", "uptime"}
	// otherUnits are key suffixes of durations in another unit.
	otherUnits = []string{"_ns", "_us", "_s", "_sec", "_secs", "_seconds", "_minutes", "_hours", "_nanos", "_micros"}
)

// KeyStyle says what is wrong with key as a key of spider's JSON: not
// snake_case, or a duration not in milliseconds by its name; nil when it
// is fine.
func KeyStyle(key string) error {
	if !snakeCase.MatchString(key) {
		return fmt.Errorf("key %q is not snake_case", key)
	}
	if strings.HasSuffix(key, "_ms") || strings.Contains(key, "_per_") { // pages_per_s is a rate
		return nil
	}
	for _, u := range otherUnits {
		if strings.HasSuffix(key, u) {
			return fmt.Errorf("key %q is a duration in another unit than milliseconds: name it …_ms and give milliseconds", key)
		}
	}
	words := strings.Split(key, "_")
	if slices.Contains(durationWords, words[len(words)-1]) {
		return fmt.Errorf("key %q names a duration without its unit: name it %s_ms and give milliseconds", key, key)
	}
	return nil
}

// styleValue checks the value of key: a key ending _ms holds a number; a
// string is not a Go duration.
func styleValue(errs *[]error, path, key string, v any) {
	if strings.HasSuffix(key, "_ms") {
		if _, ok := v.(json.Number); !ok && v != nil {
			*errs = append(*errs, fmt.Errorf("%s: a duration key ending _ms holds %T, want a number", path, v))
		}
	}
	if s, ok := v.(string); ok && goDuration.MatchString(s) {
		*errs = append(*errs, fmt.Errorf("%s: %q is a duration as text: give it as a number of milliseconds in a key ending _ms", path, s))
	}
}

func (d *Doc) check(errs *[]error, path, key string, v any, schema any) {
	s, _ := d.resolve(schema).(map[string]any)
	if s == nil {
		*errs = append(*errs, fmt.Errorf("%s: no schema", path))
		return
	}
	styleValue(errs, path, key, v)
	if v == nil {
		if s["nullable"] != true {
			*errs = append(*errs, fmt.Errorf("%s: null, but the schema does not say nullable", path))
		}
		return
	}
	if all, ok := s["allOf"].([]any); ok {
		for _, sub := range all {
			d.check(errs, path, key, v, sub)
		}
		return
	}
	if enum, ok := s["enum"].([]any); ok {
		if !slices.ContainsFunc(enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) }) {
			*errs = append(*errs, fmt.Errorf("%s: %v is not one of %v", path, v, enum))
		}
	}
	typ, _ := s["type"].(string)
	if strings.HasSuffix(key, "_ms") && typ != "number" && typ != "integer" {
		*errs = append(*errs, fmt.Errorf("%s: the schema gives duration key %q type %q, want number or integer", path, key, typ))
	}
	bad := func(want string) {
		*errs = append(*errs, fmt.Errorf("%s: %T where the schema says %s", path, v, want))
	}
	switch typ {
	case "object", "":
		m, ok := v.(map[string]any)
		if !ok {
			if typ == "object" {
				bad("object")
			}
			return
		}
		props, hasProps := s["properties"].(map[string]any)
		addl, hasAddl := s["additionalProperties"].(map[string]any)
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if _, ok := m[r.(string)]; !ok {
					*errs = append(*errs, fmt.Errorf("%s: required key %q missing", path, r))
				}
			}
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := path + "." + k
			switch ps, declared := props[k]; {
			case declared:
				if err := KeyStyle(k); err != nil {
					*errs = append(*errs, fmt.Errorf("%s: %w", p, err))
				}
				d.check(errs, p, k, m[k], ps)
			case hasAddl:
				d.check(errs, p, "", m[k], addl) // a map: its keys are data
			case hasProps:
				*errs = append(*errs, fmt.Errorf("%s: key %q is not declared in the schema", p, k))
			default: // a free-form object
				if err := KeyStyle(k); err != nil {
					*errs = append(*errs, fmt.Errorf("%s: %w", p, err))
				}
				styleWalk(errs, p, k, m[k])
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			bad("array")
			return
		}
		for i, e := range a {
			d.check(errs, fmt.Sprintf("%s[%d]", path, i), "", e, s["items"])
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			bad("string")
			return
		}
		if s["format"] == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
				*errs = append(*errs, fmt.Errorf("%s: %q is not an RFC 3339 time", path, str))
			}
		}
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			bad("integer")
			return
		}
		if _, err := n.Int64(); err != nil {
			*errs = append(*errs, fmt.Errorf("%s: %s is not an integer", path, n))
		}
	case "number":
		if _, ok := v.(json.Number); !ok {
			bad("number")
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			bad("boolean")
		}
	}
}

// CheckDoc checks the document itself: every property name under
// components/schemas and in the paths' inline schemas follows KeyStyle, and
// every property ending _ms is a number or an integer.
func (d *Doc) CheckDoc() error {
	var errs []error
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if props, ok := v["properties"].(map[string]any); ok {
				for k, ps := range props {
					if err := KeyStyle(k); err != nil {
						errs = append(errs, fmt.Errorf("%s.properties: %w", path, err))
					}
					if strings.HasSuffix(k, "_ms") {
						if t, _ := d.resolve(ps).(map[string]any)["type"].(string); t != "number" && t != "integer" {
							errs = append(errs, fmt.Errorf("%s.properties.%s: type %q, want number or integer", path, k, t))
						}
					}
				}
			}
			for k, e := range v {
				walk(path+"."+k, e)
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		}
	}
	walk("$.components", d.root["components"])
	walk("$.paths", d.root["paths"])
	return errors.Join(errs...)
}
