package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/scheduler"
)

// JSON media types whose examples are checked, and NDJSON, checked line by
// line; anything else (snapshots, the planned text endpoints) is opaque.
const (
	mediaJSON   = "application/json"
	mediaNDJSON = "application/x-ndjson"
)

// Every request example decodes with the server's strict decoder into the
// handler's type and passes the handler's own checks; every response
// example decodes strictly into the type the client reads it with; and the
// document's schema for each body is the one of that type.
func TestOpenAPIExamplesDecode(t *testing.T) {
	d := openAPI(t)
	for key, o := range d.ops(t) {
		if o.Planned {
			continue
		}
		spec := routeSpecs[key] // route parity is TestOpenAPIRoutesMatchRouter's to report
		t.Run(o.OperationID, func(t *testing.T) {
			checkRequestExamples(t, d, o, spec)
			for status, r := range o.Responses {
				want, documented := spec.ok[status]
				switch {
				case strings.HasPrefix(status, "2") && !documented:
					t.Errorf("%s documents %s, which the handler never answers", key, status)
				case strings.HasPrefix(status, "3"):
					want = nil // a redirect has no body
				case !strings.HasPrefix(status, "2"):
					want = typ[api.ErrorBody]()
				}
				checkBodyExamples(t, d, fmt.Sprintf("%s %s", key, status), r.Content, want, true, spec.full)
			}
			for status := range spec.ok {
				if _, ok := o.Responses[status]; !ok {
					t.Errorf("%s does not document its %s answer", key, status)
				}
			}
		})
	}
}

func checkRequestExamples(t *testing.T, d *oaDoc, o op, spec opSpec) {
	t.Helper()
	var content map[string]oaMedia
	if o.RequestBody != nil {
		content = o.RequestBody.Content
	}
	switch {
	case spec.binary:
		if _, ok := content["application/octet-stream"]; !ok || len(content) != 1 {
			t.Errorf("%s: the body is an octet stream, documented as %v", o.key, slices.Collect(maps.Keys(content)))
		}
		return
	case spec.req == nil && o.RequestBody != nil:
		t.Errorf("%s documents a request body the handler does not read", o.key)
		return
	case spec.req != nil && o.RequestBody == nil:
		t.Errorf("%s does not document its %s body", o.key, spec.req)
		return
	}
	checkBodyExamples(t, d, o.key+" request", content, spec.req, false, nil)
}

// checkBodyExamples decodes every example of a JSON or NDJSON body into a
// new want (a list's example named "full" into full). A nil want means no
// JSON body. Request bodies also go through the handler's conversion and
// validation.
func checkBodyExamples(t *testing.T, d *oaDoc, where string, content map[string]oaMedia, want reflect.Type, response bool, full reflect.Type) {
	t.Helper()
	m, isJSON := content[mediaJSON]
	nd, isNDJSON := content[mediaNDJSON]
	switch {
	case want == nil:
		if isJSON || isNDJSON {
			t.Errorf("%s: documents a JSON body where there is none", where)
		}
		return
	case isNDJSON:
		m = nd
	case !isJSON:
		t.Errorf("%s: no %s body documented for %s", where, mediaJSON, want)
		return
	}
	checkSchemaNames(t, d, where, m, want, isNDJSON)
	examples := d.examples(t, m)
	if len(examples) == 0 {
		t.Errorf("%s: no example", where)
	}
	for name, raw := range examples {
		values := []json.RawMessage{raw}
		if isNDJSON {
			values = ndjsonLines(t, where, raw)
		}
		into := want
		if name == "full" && full != nil {
			into = full
		}
		for _, v := range values {
			if err := decodeStrict(v, reflect.New(into).Interface()); err != nil {
				t.Errorf("%s: example %q does not decode into %s: %v", where, name, into, err)
				continue
			}
			if !response {
				if err := handlerAccepts(want, v); err != nil {
					t.Errorf("%s: example %q is refused by the handler's checks: %v", where, name, err)
				}
			}
		}
	}
}

// checkSchemaNames: the body's schema is the component named after want
// (or an array of it), so the document and the Go types name the same thing.
func checkSchemaNames(t *testing.T, d *oaDoc, where string, m oaMedia, want reflect.Type, ndjson bool) {
	t.Helper()
	s := m.Schema
	if ndjson {
		s = m.LineSchema
	}
	if s == nil {
		t.Errorf("%s: no schema", where)
		return
	}
	if want.Kind() == reflect.Slice {
		if s.Type != "array" || s.Items == nil {
			t.Errorf("%s: schema is not an array of %s", where, want.Elem().Name())
			return
		}
		s, want = s.Items, want.Elem()
		if len(s.AnyOf) > 0 {
			s = s.AnyOf[0] // a list's entries: the default form first (?full=true's next)
		}
	}
	if got := strings.TrimPrefix(s.Ref, "#/components/schemas/"); got != want.Name() {
		t.Errorf("%s: schema is %q, the code uses %s", where, s.Ref, want)
	}
}

// ndjsonLines splits an NDJSON example (a JSON string) into its lines.
func ndjsonLines(t *testing.T, where string, raw json.RawMessage) []json.RawMessage {
	t.Helper()
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		t.Fatalf("%s: an NDJSON example must be a string: %v", where, err)
	}
	var out []json.RawMessage
	for line := range strings.SplitSeq(strings.TrimSpace(text), "\n") {
		out = append(out, json.RawMessage(line))
	}
	return out
}

// handlerAccepts runs a request example through what its handler does
// after decoding: the same conversions and validations, with the real CEL
// checker, so an example that decodes but would be refused is caught.
func handlerAccepts(want reflect.Type, raw []byte) error {
	v := reflect.New(want).Interface()
	if err := json.Unmarshal(raw, v); err != nil {
		return err
	}
	switch in := v.(type) {
	case *api.BundleSpec:
		return bundleAccepted(*in)
	case *api.NodeSpec:
		n, err := nodeFromAPI(orDefault(in.ID, "worker-1"), *in)
		if err != nil {
			return err
		}
		return fsm.ValidateNode(&n)
	case *api.Pool:
		p, err := poolFromAPI(orDefault(in.Name, "default"), *in)
		if err != nil {
			return err
		}
		fsm.NormalizePool(&p)
		return fsm.ValidatePool(&p)
	case *api.ClusterCaps:
		caps, err := capsFromAPI(*in)
		if err != nil {
			return err
		}
		return fsm.ValidateClusterCaps(&caps)
	case *api.NodeService:
		svc, err := serviceFromAPI(orDefault(in.ID, "svc"), *in)
		if err != nil {
			return err
		}
		fsm.NormalizeService(&svc)
		return fsm.ValidateService(&svc)
	case *api.AssignmentStatus:
		if !slices.Contains(reportStates, in.State) {
			return fmt.Errorf("state %q is not one of %v", in.State, reportStates)
		}
	case *api.TransferLeadershipRequest:
	case *api.ACLTokenRequest:
		_, _, err := aclTokenFromAPI(*in, 1)
		return err
	case *api.KeyringRequest:
		_, err := keyringFromAPI(*in)
		return err
	default:
		return fmt.Errorf("no handler check for %T", v)
	}
	return nil
}

// bundleAccepted is decodeSpec without a state: conversion problems and
// every state-independent static validation error.
func bundleAccepted(in api.BundleSpec) error {
	in.ID = orDefault(in.ID, "generated")
	spec, problems := specFromAPI(in)
	fsm.Normalize(&spec)
	f := fsm.Validate(&spec, nil, scheduler.ExprChecker{})
	var errs []error
	for _, p := range append(problems, f.Errors...) {
		errs = append(errs, fmt.Errorf("%s: %s", p.Code, p.Message))
	}
	return errors.Join(errs...)
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// Every example also conforms to its own schema in the document: types,
// enums, required properties, no undocumented properties, date-times.
func TestOpenAPIExamplesMatchSchemas(t *testing.T) {
	d := openAPI(t)
	for key, o := range d.ops(t) {
		bodies := map[string]map[string]oaMedia{}
		if o.RequestBody != nil {
			bodies["request"] = o.RequestBody.Content
		}
		for status, r := range o.Responses {
			bodies[status] = r.Content
		}
		for what, content := range bodies {
			for media, m := range content {
				if media != mediaJSON {
					continue
				}
				for name, raw := range d.examples(t, m) {
					var v any
					mustUnmarshal(t, raw, &v)
					for _, err := range d.conform(t, m.Schema, v, "$", false) {
						t.Errorf("%s %s example %q: %v", key, what, name, err)
					}
				}
			}
		}
	}
}

// conform checks v against s and returns every mismatch, each with its
// JSON path. An open schema is one allOf part: it leaves the check for
// undocumented properties to the whole.
func (d *oaDoc) conform(t *testing.T, s *oaSchema, v any, at string, open bool) []error {
	t.Helper()
	s = d.schema(t, s)
	var errs []error
	for _, part := range s.AllOf {
		errs = append(errs, d.conform(t, part, v, at, true)...)
	}
	if len(s.AnyOf) > 0 {
		return append(errs, d.conformAny(t, s.AnyOf, v, at)...)
	}
	if s.Type != "" && !hasType(s.Type, v) {
		return append(errs, fmt.Errorf("%s: %v is not a %s", at, v, s.Type))
	}
	if str, ok := v.(string); ok {
		if len(s.Enum) > 0 && !slices.Contains(s.Enum, str) {
			errs = append(errs, fmt.Errorf("%s: %q is not one of %v", at, str, s.Enum))
		}
		if _, err := time.Parse(time.RFC3339, str); s.Format == "date-time" && err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not an RFC 3339 time", at, str))
		}
	}
	if list, ok := v.([]any); ok && s.Items != nil {
		for i, item := range list {
			errs = append(errs, d.conform(t, s.Items, item, fmt.Sprintf("%s[%d]", at, i), false)...)
		}
	}
	if obj, ok := v.(map[string]any); ok {
		errs = append(errs, d.conformObject(t, s, obj, at, open)...)
	}
	return errs
}

// conformAny checks v against alternatives: it conforms when it conforms
// to one of them.
func (d *oaDoc) conformAny(t *testing.T, alts []*oaSchema, v any, at string) []error {
	t.Helper()
	var errs []error
	for _, alt := range alts {
		e := d.conform(t, alt, v, at, false)
		if len(e) == 0 {
			return nil
		}
		errs = append(errs, e...)
	}
	return errs
}

func (d *oaDoc) conformObject(t *testing.T, s *oaSchema, obj map[string]any, at string, open bool) []error {
	t.Helper()
	var errs []error
	for _, name := range s.Required {
		if _, ok := obj[name]; !ok {
			errs = append(errs, fmt.Errorf("%s: required property %q is missing", at, name))
		}
	}
	props := d.properties(t, s)
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		switch {
		case s.AdditionalProperties != nil:
			errs = append(errs, d.conform(t, s.AdditionalProperties, obj[k], at+"."+k, false)...)
		case props[k] == nil && len(props) > 0 && !open:
			errs = append(errs, fmt.Errorf("%s: property %q is not in the schema", at, k))
		case s.Properties[k] != nil: // allOf parts check their own properties
			errs = append(errs, d.conform(t, s.Properties[k], obj[k], at+"."+k, false)...)
		}
	}
	return errs
}

// properties is a schema's properties, its allOf parts' included.
func (d *oaDoc) properties(t *testing.T, s *oaSchema) map[string]*oaSchema {
	t.Helper()
	s = d.schema(t, s)
	out := maps.Clone(s.Properties)
	if out == nil {
		out = map[string]*oaSchema{}
	}
	for _, part := range s.AllOf {
		maps.Copy(out, d.properties(t, part))
	}
	return out
}

func hasType(typ string, v any) bool {
	switch x := v.(type) {
	case string:
		return typ == "string"
	case bool:
		return typ == "boolean"
	case float64:
		return typ == "number" || typ == "integer" && x == float64(int64(x))
	case []any:
		return typ == "array"
	case map[string]any:
		return typ == "object"
	}
	return false
}

// The strict decoder really is strict: an undocumented field in an example
// would be refused, which is what makes the decoding checks above count.
func TestOpenAPIDecoderRejectsUnknownFields(t *testing.T) {
	err := decodeStrict([]byte(`{"pool":"default","jobs":[],"placement":{},"colour":"red"}`), new(api.BundleSpec))
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte(`unknown field "colour"`)) {
		t.Fatalf("decodeStrict accepted an unknown field: %v", err)
	}
}
