package httpapi

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
)

// jsonRoundTrip is v as a client decodes it: what a filter must see.
func jsonRoundTrip(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFilterSeesJSON: the form a filter reads an entry in is the JSON the
// API sends, field for field (omitted fields, nulls, numbers as doubles,
// times as strings, embedded specs flattened), for every listed type.
func TestFilterSeesJSON(t *testing.T) {
	b := newTestBackend("s1")
	seedCluster(t, b)
	placeBundle(t, b, "b1")
	st := b.State()
	view := nodeView{st: st, lastSeen: map[string]time.Time{"n1": time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)}}
	full := bundleToAPI(st.Bundle("b1"))
	full.Explain = &api.Explain{NodesEvaluated: 3, Filtered: map[string]int{"capacity": 2}}
	node := view.node(st.Node("n1"))
	for name, v := range map[string]any{
		"bundle": full, "bundle summary": bundleSummary(st.Bundle("b1")), "node": node, "node summary": nodeSummary(&node),
		"pool": poolToAPI(st.Pool("p1")), "empty bundle": api.Bundle{}, "token": api.ACLToken{AccessorID: "a"},
	} {
		want := jsonRoundTrip(t, v)
		if got := jsonNative(reflect.ValueOf(v)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: filter form\n%#v\nJSON\n%#v", name, got, want)
		}
	}
}

// TestFilterExpressions: expressions read the lazy form as they would the
// JSON: fields, presence, nested lists, numbers against ints, equality.
func TestFilterExpressions(t *testing.T) {
	b := newTestBackend("s1")
	seedCluster(t, b)
	placeBundle(t, b, "b1")
	bundle := bundleToAPI(b.State().Bundle("b1"))
	tests := []struct {
		expr string
		want bool
	}{
		{`bundle.id == "b1" && bundle.state == "placed"`, true},
		{`bundle.epoch == 1 && bundle.epoch >= 1.0 && bundle.createIndex > 0`, true},
		{`has(bundle.resilience)`, false},
		{`has(bundle.explain) || bundle.degradations.size() == 0`, true},
		{`bundle.replicas[0].jobs[0].nodeId == "n1" && bundle.replicas[0].jobs[0].cores == [0, 1]`, true},
		{`bundle.replicas.exists(r, r.jobs.all(j, j.gpu.capacity == 0.25))`, true},
		{`bundle.jobs[0].requirements == {"capacity": 1.5, "cores": 2.0, "gpuCapacity": 0.25}`, true},
		{`"placement" in bundle && size(bundle) > 5`, true},
		{`bundle.tags.team == "video"`, false}, // no tags: an error, so no match
	}
	for _, tc := range tests {
		f, err := compileFilter("bundle", tc.expr)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		got, err := f.match(context.Background(), bundle)
		if err != nil || got != tc.want {
			t.Errorf("%s = %v, %v; want %v", tc.expr, got, err, tc.want)
		}
	}
}
