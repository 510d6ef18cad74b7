package httpapi

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
)

// schemaTypes are the wire types of api/ that components/schemas mirrors,
// one schema per type, named like it.
var schemaTypes = []reflect.Type{
	typ[api.ErrorBody](), typ[api.Error](), typ[api.Finding](), typ[api.ServiceRequirements](),
	typ[api.Leader](), typ[api.Peer](), typ[api.Health](), typ[api.Member](),
	typ[api.RaftConfiguration](), typ[api.TransferLeadershipRequest](), typ[api.StateDigest](),
	typ[api.ACLToken](), typ[api.ACLTokenRequest](), typ[api.ACLTokenCreated](),
	typ[api.Tier](), typ[api.PoolCaps](), typ[api.PoolDefaults](), typ[api.InstanceType](),
	typ[api.Provisioner](), typ[api.PoolUsage](), typ[api.Pool](), typ[api.ClusterCaps](), typ[api.CapGroup](), typ[api.PoolNodeStatus](), typ[api.PoolStatus](),
	typ[api.GPU](), typ[api.Capability](), typ[api.CapabilityCount](), typ[api.CapabilityRequest](),
	typ[api.NodeSpec](), typ[api.GPUReserved](), typ[api.Reserved](), typ[api.Node](),
	typ[api.GPUShare](), typ[api.Assignment](), typ[api.AssignmentStatus](),
	typ[api.Launch](), typ[api.LegacyJob](), typ[api.RuntimeRequirement](), typ[api.Template](), typ[api.TemplateVersion](),
	typ[api.Requirements](), typ[api.Affinity](), typ[api.Job](),
	typ[api.Placement](), typ[api.Resilience](), typ[api.RestartPolicy](), typ[api.BundleSpec](),
	typ[api.JobPlacement](), typ[api.Replica](), typ[api.Degradation](), typ[api.NearestMiss](),
	typ[api.Explain](), typ[api.Bundle](), typ[api.CreateResponse](), typ[api.ValidateResponse](),
	typ[api.PlanResponse](), typ[api.PlanEviction](), typ[api.Event](), typ[api.NodeService](),
	typ[api.Keyring](), typ[api.KeyringKey](), typ[api.KeyringMember](), typ[api.KeyringRequest](),
	typ[api.BundleSummary](), typ[api.ReplicaSummary](), typ[api.NodeSummary](),
}

// Each schema has exactly the JSON fields of its Go type, each of the
// matching JSON type (a nested struct by a reference to its own schema).
func TestOpenAPISchemasMirrorAPITypes(t *testing.T) {
	d := openAPI(t)
	names := map[string]bool{}
	for _, gt := range schemaTypes {
		names[gt.Name()] = true
		s, ok := d.Components.Schemas[gt.Name()]
		if !ok {
			t.Errorf("components/schemas has no %s", gt.Name())
			continue
		}
		props := d.properties(t, s)
		fields := jsonFields(gt)
		if got, want := slices.Sorted(maps.Keys(props)), slices.Sorted(maps.Keys(fields)); !slices.Equal(got, want) {
			t.Errorf("schema %s has properties %v; %s has JSON fields %v", gt.Name(), got, gt, want)
			continue
		}
		for name, ft := range fields {
			if msg := d.matches(t, props[name], ft); msg != "" {
				t.Errorf("schema %s property %s: %s", gt.Name(), name, msg)
			}
		}
		for _, r := range requiredOf(d, t, s) {
			if _, ok := props[r]; !ok {
				t.Errorf("schema %s requires %q, which it does not define", gt.Name(), r)
			}
		}
	}
	for name := range d.Components.Schemas {
		if !names[name] {
			t.Errorf("schema %s mirrors no type in schemaTypes", name)
		}
	}
}

// jsonFields maps a struct's JSON field names to their types, embedded
// structs flattened as encoding/json does.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case f.Anonymous && name == "":
			maps.Copy(out, jsonFields(f.Type))
		case name == "":
			out[f.Name] = f.Type
		default:
			out[name] = f.Type
		}
	}
	return out
}

// matches says how schema s fails to describe Go type gt ("" if it does).
func (d *oaDoc) matches(t *testing.T, s *oaSchema, gt reflect.Type) string {
	t.Helper()
	if gt.Kind() == reflect.Pointer {
		gt = gt.Elem()
	}
	if gt.Kind() == reflect.Struct && gt != typ[time.Time]() {
		if ref := strings.TrimPrefix(s.Ref, "#/components/schemas/"); ref != gt.Name() {
			return "want a reference to " + gt.Name() + ", have " + strconv.Quote(s.Ref)
		}
		return ""
	}
	want := jsonType(gt)
	if s.Type != want {
		return "want type " + want + ", have " + strconv.Quote(s.Type)
	}
	switch {
	case gt == typ[time.Time]() && s.Format != "date-time":
		return "a time needs format date-time"
	case gt.Kind() == reflect.Slice && s.Items == nil, gt.Kind() == reflect.Map && s.AdditionalProperties == nil:
		return "the element schema is missing"
	case gt.Kind() == reflect.Slice:
		return d.matches(t, s.Items, gt.Elem())
	case gt.Kind() == reflect.Map:
		return d.matches(t, s.AdditionalProperties, gt.Elem())
	}
	return ""
}

func jsonType(gt reflect.Type) string {
	switch gt.Kind() {
	case reflect.String, reflect.Struct: // the only struct left is time.Time
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice:
		return "array"
	case reflect.Map:
		return "object"
	}
	return "unsupported kind " + gt.Kind().String()
}

func requiredOf(d *oaDoc, t *testing.T, s *oaSchema) []string {
	s = d.schema(t, s)
	out := slices.Clone(s.Required)
	for _, part := range s.AllOf {
		out = append(out, requiredOf(d, t, part)...)
	}
	return out
}

// enumSources ties each documented enum to the constants it lists.
var enumSources = []struct {
	schema, property string
	file, prefix     string
}{
	{"Error", "code", "../api/errors.go", "Code"},
	{"Finding", "code", "../api/errors.go", "Finding"},
	{"Event", "type", "../api/types_cluster.go", "Event"},
	{"Assignment", "desired", "../api/types_cluster.go", "Desired"},
	{"Bundle", "state", "../api/types_bundle.go", "State"},
	{"BundleSummary", "state", "../api/types_bundle.go", "State"},
	{"NodeSummary", "status", "../api/types_node.go", "Node"},
	{"BundleSpec", "priority", "../api/types_bundle.go", "Priority"},
	{"Placement", "sameAz", "../api/types_bundle.go", "SameAz"},
	{"Launch", "driver", "../api/types_bundle.go", "Driver"},
	{"JobPlacement", "status", "../api/types_bundle.go", "Job"},
	{"Assignment", "status", "../api/types_bundle.go", "Job"},
	{"Replica", "role", "../api/types_bundle.go", "Role"},
	{"Node", "status", "../api/types_node.go", "Node"},
	{"Pool", "kind", "../api/types_node.go", "Pool"},
	{"Pool", "scoring", "../api/types_node.go", "Scoring"},
	{"PoolNodeStatus", "state", "../api/types_node.go", "Lifecycle"},
	{"NodeService", "lifecycle", "../api/types_node.go", "ServiceLifecycle"},
	{"Degradation", "code", "../fsm/types.go", "Degrade"},
	{"KeyringRequest", "op", "../api/types_keyring.go", "Keyring"},
}

// paramEnumSources ties each documented query parameter enum to the
// constants it lists.
var paramEnumSources = []struct{ param, file, prefix string }{
	{"BundleStateFilter", "../api/types_bundle.go", "State"},
	{"NodeStatusFilter", "../api/types_node.go", "Node"},
}

// Every documented enum lists exactly the values the code defines, so a
// new error code, event type, degradation or bundle state cannot go
// undocumented.
func TestOpenAPIEnumsMatchConstants(t *testing.T) {
	d := openAPI(t)
	for _, src := range paramEnumSources {
		p, ok := d.Components.Parameters[src.param]
		if !ok || p.Schema == nil {
			t.Errorf("no parameter %s with a schema", src.param)
			continue
		}
		want := stringConsts(t, src.file, src.prefix)
		if got := slices.Sorted(slices.Values(p.Schema.Enum)); !slices.Equal(got, want) {
			t.Errorf("parameter %s enum is %v; %s defines %s* = %v", src.param, got, src.file, src.prefix, want)
		}
	}
	for _, src := range enumSources {
		prop := d.properties(t, d.Components.Schemas[src.schema])[src.property]
		if prop == nil {
			t.Errorf("schema %s has no property %s", src.schema, src.property)
			continue
		}
		want := stringConsts(t, src.file, src.prefix)
		if got := slices.Sorted(slices.Values(d.schema(t, prop).Enum)); !slices.Equal(got, want) {
			t.Errorf("%s.%s enum is %v; %s defines %s* = %v", src.schema, src.property, got, src.file, src.prefix, want)
		}
	}
}

// stringConsts parses file and returns the sorted values of its string
// constants whose names start with prefix.
func stringConsts(t *testing.T, file, prefix string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				lit, ok := valueAt(vs, i).(*ast.BasicLit)
				if !strings.HasPrefix(name.Name, prefix) || !ok || lit.Kind != token.STRING {
					continue
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, v)
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s defines no string constants %s*", file, prefix)
	}
	slices.Sort(out)
	return out
}

func valueAt(vs *ast.ValueSpec, i int) ast.Expr {
	if i < len(vs.Values) {
		return vs.Values[i]
	}
	return nil
}
