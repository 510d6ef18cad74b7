package httpapi

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/internal/fill"
)

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// addedFields are the fields types gained after the golden file was
// written (issue 17: the launch union, runtimes, node kind): fillOld leaves
// them zero, so the golden data still describes the data it was made from.
// Their conversions have expectations of their own (convert_template_test.go).
var addedFields = map[string][]string{
	"Launch":       {"Kind", "Ref", "Parameters", "Tags", "StartDateTime", "StopDateTime", "Job"},
	"Job":          {"Runtime", "Priority"},
	"Assignment":   {"Runtime", "MemoryLimitMiB", "Generation", "RunOnce", "ExitCode"},
	"Node":         {"Runtimes", "Kind", "TotalMemoryMiB"},
	"InstanceType": {"Runtimes", "Kind", "TotalMemoryMiB", "Labels", "Taints"},
	"Pool":         {"CapGroup"},
	// issue 18: node services' requirements and constraints
	// (TestServiceConvertsRequirements).
	"NodeService": {"Requirements", "Constraints"},
	// Issue 18: bundle kinds.
	"BundleSpec":   {"Kind", "Count", "MaxPerNode", "MaxPerAz", "MaxUnavailable", "Restart", "TTLAfterFinished"},
	"Bundle":       {"Outcome", "FinishTime", "Generation", "Rolling", "Ran", "Settling"}, // Ran later (TestFinishedBatchJobLogs); Settling is not shown
	"JobPlacement": {"ExitCode", "Attempts", "RestartAt", "Message"},                      // Message later (TestBundleShowsJobMessage)
	// issue 18: memory.
	"Request":      {"MemoryMiB", "MemoryLimitMiB"},
	"Grant":        {"MemoryMiB"},
	"Usage":        {"MemoryMiB"},
	"PoolCaps":     {"MaxMemoryMiB"},
	"PoolDefaults": {"MemoryMiB"},
	"PoolUsage":    {"MemoryMiB"},
}

// addedZeroKeys are JSON keys added since the golden file that the API
// shows even when zero (a node's memory); a zero one is not compared.
var addedZeroKeys = map[string]bool{"allocatableMemoryMiB": true, "memoryMiB": true}

func withoutAddedZeros(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if f, ok := e.(float64); ok && f == 0 && addedZeroKeys[k] {
				delete(v, k)
				continue
			}
			v[k] = withoutAddedZeros(e)
		}
	case []any:
		for i := range v {
			v[i] = withoutAddedZeros(v[i])
		}
	}
	return v
}

// fillOld is fill.New of T as its types were when the golden file was written.
func fillOld[T any](seed int) *T {
	return fill.NewWithout[T](seed, func(owner reflect.Type, f reflect.StructField) bool {
		return slices.Contains(addedFields[owner.Name()], f.Name)
	})
}

// withoutKey is v's JSON object without one key: a field derived on the way
// out that the golden file predates (TestEffectivePriorityReadsBack covers it).
func withoutKey(v any, key string) map[string]any {
	var m map[string]any
	b, err := json.Marshal(v)
	if err != nil || json.Unmarshal(b, &m) != nil {
		panic(fmt.Sprintf("withoutKey: %v", err))
	}
	delete(m, key)
	return m
}

// withoutAssignmentIDs drops the placements' assignmentId, computed (issue
// 18) after the golden file was written; TestBundleShowsAssignmentIDs
// checks it.
func withoutAssignmentIDs(b api.Bundle) api.Bundle {
	for i := range b.Replicas {
		for k := range b.Replicas[i].Jobs {
			b.Replicas[i].Jobs[k].AssignmentID = ""
		}
	}
	return b
}

// convertOutputs runs every converter on filled and zero values, and on bad
// input, keyed by what was converted.
func convertOutputs() map[string]any {
	out := map[string]any{}
	st := fsm.New(fsm.Config{}).State()
	for name, b := range map[string]*fsm.Bundle{"filled": fillOld[fsm.Bundle](0), "zero": {}} {
		out["bundleToAPI/"+name] = withoutKey(withoutAssignmentIDs(bundleToAPI(b)), "effectivePriority")
		spec, probs := specFromAPI(specToAPI(&b.Spec))
		out["specFromAPI/"+name] = []any{spec, probs}
	}
	zs, zp := specFromAPI(api.BundleSpec{})
	out["specFromAPI/apizero"] = []any{zs, zp}
	for name, n := range map[string]*fsm.Node{"filled": fillOld[fsm.Node](0), "zero": {}} {
		a := nodeView{st: st}.node(n)
		out["nodeToAPI/"+name] = a
		back, err := nodeFromAPI("path-id", a.NodeSpec)
		out["nodeFromAPI/"+name] = []any{back, errText(err)}
	}
	for name, p := range map[string]*fsm.Pool{"filled": fillOld[fsm.Pool](0), "zero": {}} {
		a := poolToAPI(p)
		out["poolToAPI/"+name] = a
		back, err := poolFromAPI("path-name", a)
		out["poolFromAPI/"+name] = []any{back, errText(err)}
	}
	for name, s := range map[string]*fsm.NodeService{"filled": fillOld[fsm.NodeService](0), "zero": {}} {
		a := serviceToAPI(s)
		out["serviceToAPI/"+name] = a
		out["serviceFromAPI/"+name], _ = serviceFromAPI("path-id", a)
	}
	for name, a := range map[string]*fsm.Assignment{"filled": fillOld[fsm.Assignment](0), "zero": {}} {
		out["assignmentToAPI/"+name] = assignmentToAPI(a)
	}
	for name, e := range map[string]*fsm.Event{"filled": fillOld[fsm.Event](0), "zero": {}} {
		out["eventToAPI/"+name] = eventToAPI(*e)
	}
	out["explainToAPI/filled"] = explainToAPI(fillOld[fsm.Explain](0))
	out["explainToAPI/zero"] = explainToAPI(&fsm.Explain{})
	badInputs(out)
	return out
}

// badInputs converts every unit-bearing field wrong, alone and together.
func badInputs(out map[string]any) {
	bad := api.BundleSpec{ID: "b", Pool: "p", StartAt: "yesterday", StopAt: "1969-12-31T23:59:59Z", Jobs: []api.Job{
		{Name: "a", Requirements: api.Requirements{Capacity: math.NaN(), GPUCapacity: 0.0001}},
		{Name: "b", Requirements: api.Requirements{Capacity: -1, GPUCapacity: math.Inf(1)}},
		{Name: "c", Requirements: api.Requirements{Capacity: 1e300}},
	}}
	_, probs := specFromAPI(bad)
	out["specFromAPI/bad"] = probs
	badNodes := []api.NodeSpec{
		{TotalCapacity: math.Inf(1)}, {UtilizationCap: -1}, {GPUs: []api.GPU{{}, {TotalCapacity: math.NaN()}}},
		{TotalCapacity: -1, UtilizationCap: math.NaN(), GPUs: []api.GPU{{TotalCapacity: -1}}},
	}
	for i, n := range badNodes {
		_, err := nodeFromAPI("n", n)
		out[fmt.Sprintf("nodeFromAPI/bad%d", i)] = errText(err)
	}
	badPools := []api.Pool{
		{Caps: api.PoolCaps{MaxCapacity: math.NaN()}}, {Defaults: api.PoolDefaults{Capacity: -1}},
		{InstanceTypes: []api.InstanceType{{}, {TotalCapacity: -2}}},
		{InstanceTypes: []api.InstanceType{{GPUs: []api.GPU{{}, {TotalCapacity: 0.0002}}}}},
		{IdleTimeout: "x"}, {SpawnTimeout: "-5s"},
		{Caps: api.PoolCaps{MaxCapacity: -1}, IdleTimeout: "x"},
	}
	for i, p := range badPools {
		_, err := poolFromAPI("p", p)
		out[fmt.Sprintf("poolFromAPI/bad%d", i)] = errText(err)
	}
}

// TestConvertMatchesGolden: every converter answers, in JSON, exactly what
// the hand-written converters answered before the conversion followed from
// the types (testdata/convert_golden.json was written by them, at commit
// eef47a6, from these same inputs), errors and their field paths included. FSM values (the ...FromAPI entries) are
// compared without their empty fields: the unit-free FSM types are now the
// wire types, whose JSON omits empty strings, and an empty list in a
// request stays empty rather than nil; neither survives the Raft command's
// encoding, and JSON is not how the FSM stores them.
func TestConvertMatchesGolden(t *testing.T) {
	want, err := os.ReadFile("testdata/convert_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var wantMap, gotMap map[string]json.RawMessage
	if err := json.Unmarshal(want, &wantMap); err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(convertOutputs())
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(got, &gotMap); err != nil {
		t.Fatal(err)
	}
	for k, w := range wantMap {
		if g := gotMap[k]; !jsonEqual(t, g, w, strings.Contains(k, "FromAPI/")) {
			t.Errorf("%s:\n got %s\nwant %s", k, g, w)
		}
	}
	if len(gotMap) != len(wantMap) {
		t.Errorf("%d outputs, golden has %d", len(gotMap), len(wantMap))
	}
}

func jsonEqual(t *testing.T, a, b json.RawMessage, dropEmpty bool) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	x = withoutAddedZeros(x)
	if dropEmpty {
		x, y = withoutEmpty(x), withoutEmpty(y)
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

// withoutEmpty drops empty strings, lists and objects and nulls from
// objects, at any depth.
func withoutEmpty(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			e = withoutEmpty(e)
			switch e := e.(type) {
			case nil:
				delete(v, k)
				continue
			case string:
				if e == "" {
					delete(v, k)
					continue
				}
			case []any:
				if len(e) == 0 {
					delete(v, k)
					continue
				}
			case map[string]any:
				if len(e) == 0 {
					delete(v, k)
					continue
				}
			}
			v[k] = e
		}
	case []any:
		for i := range v {
			v[i] = withoutEmpty(v[i])
		}
	}
	return v
}
