package fsm

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestRowCodecRoundTrip: any bundle or assignment, whatever its fields hold
// (nil and empty alike), decodes to exactly what was encoded.
func TestRowCodecRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.Make[Bundle]().Draw(t, "bundle")
		got, err := decodeBundleRow(&rowDec{b: encodeBundleRow(nil, &b)})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, &b) {
			t.Fatalf("bundle round trip:\n got %#v\nwant %#v", got, &b)
		}
		a := rapid.Make[Assignment]().Draw(t, "assignment")
		gotA, err := decodeAssignmentRow(&rowDec{b: encodeAssignmentRow(nil, &a)})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(gotA, &a) {
			t.Fatalf("assignment round trip:\n got %#v\nwant %#v", gotA, &a)
		}
	})
}

// TestRowCodecRejectsDamage: a truncated or extended record is an error,
// never a panic or a silently different row.
func TestRowCodecRejectsDamage(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.Make[Bundle]().Draw(t, "bundle")
		rec := encodeBundleRow(nil, &b)
		cut := rapid.IntRange(0, len(rec)-1).Draw(t, "cut")
		if _, err := decodeBundleRow(&rowDec{b: rec[:cut]}); err == nil {
			t.Fatalf("record cut at %d of %d decoded without error", cut, len(rec))
		}
		if _, err := decodeBundleRow(&rowDec{b: append(rec, 0)}); err == nil {
			t.Fatal("record with a trailing byte decoded without error")
		}
	})
}

// codecFields is every field the row codec writes. A field added to these
// types must be added to the codec, under a new section kind, and here.
var codecFields = map[string][]string{
	"Bundle": {"Spec", "State", "Epoch", "Replicas", "Degradations", "Explain", "SubmitTime", "Deleting",
		"DeleteTime", "AttemptIndex", "CreateIndex", "ModifyIndex"},
	"BundleSpec":        {"ID", "Pool", "Priority", "Jobs", "Placement", "Resilience", "StartAt", "StopAt", "Tags"},
	"Job":               {"Name", "Requirements", "CoLocateWith", "SeparateFrom", "Tolerations", "Constraints", "Affinities", "Launch"},
	"Request":           {"Capacity", "Cores", "GPUCapacity", "GPUModel", "ExclusiveGPUs", "Capabilities"},
	"CapabilityRequest": {"Name", "Count", "AttributeMatches"},
	"Affinity":          {"Expression", "Weight"},
	"Launch":            {"Driver", "Command", "Env"},
	"Placement":         {"SameNodeDefault", "SameAz"},
	"Resilience":        {"Pool", "SameNode", "SameAz", "SameCloud"},
	"Replica":           {"Slot", "Role", "State", "Jobs"},
	"JobPlacement":      {"Name", "NodeID", "Grant", "Status"},
	"Grant":             {"Capacity", "Cores", "GPU", "ExclusiveGPUs", "Capabilities"},
	"GPUShare":          {"Index", "Capacity"},
	"CapabilityCount":   {"Name", "Count"},
	"Degradation":       {"Code", "Message", "Since"},
	"Explain":           {"NodesEvaluated", "Filtered", "NearestMiss"},
	"NearestMiss":       {"NodeID", "Stage", "Detail"},
	"Assignment": {"ID", "BundleID", "Replica", "Job", "NodeID", "Role", "Epoch", "Desired", "Status", "Message",
		"Grant", "Launch", "ServiceID", "CreateIndex", "ModifyIndex"},
}

// TestRowCodecCoversEveryField walks the row types and fails on a field
// the codec does not know.
func TestRowCodecCoversEveryField(t *testing.T) {
	seen := map[string]bool{}
	var walk func(typ reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ.Name()] {
			return
		}
		seen[typ.Name()] = true
		var names []string
		for f := range typ.Fields() {
			names = append(names, f.Name)
			walk(f.Type)
		}
		if want, ok := codecFields[typ.Name()]; !ok || !slices.Equal(names, want) {
			t.Errorf("%s has fields %s; the row codec writes %s", typ.Name(), strings.Join(names, ","), strings.Join(want, ","))
		}
	}
	walk(reflect.TypeFor[Bundle]())
	walk(reflect.TypeFor[Assignment]())
}
