package httpapi

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/internal/fill"
	"github.com/amserver/amserver/ledger"
)

// roundTrip checks one writable resource: an FSM value with every field
// set gives an API value with every field set, and that API value survives
// API → FSM → API unchanged, but for its read-only fields, which a request
// cannot set (readOnly clears them).
func roundTrip[A, F any](t *testing.T, name string, toAPI func(*F) A, fromAPI func(A) (F, error), readOnly func(*A)) {
	t.Helper()
	for seed := range 3 {
		wire := toAPI(fill.New[F](seed * 1000))
		if z := fill.Zeros(&wire); len(z) > 0 {
			t.Errorf("%s: API fields left zero by the conversion: %v", name, z)
		}
		back, err := fromAPI(wire)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		again := toAPI(&back)
		readOnly(&wire)
		if !reflect.DeepEqual(again, wire) {
			t.Errorf("%s: API → FSM → API changed the value:\n got %+v\nwant %+v", name, again, wire)
		}
	}
}

// TestWritableRoundTrips covers every resource a client writes.
func TestWritableRoundTrips(t *testing.T) {
	roundTrip(t, "bundle spec", specToAPI, func(in api.BundleSpec) (fsm.BundleSpec, error) {
		spec, problems := specFromAPI(in)
		if len(problems) > 0 {
			t.Fatalf("problems: %+v", problems)
		}
		return spec, nil
	}, func(*api.BundleSpec) {})
	roundTrip(t, "pool", poolToAPI, func(in api.Pool) (fsm.Pool, error) { return poolFromAPI(in.Name, in) },
		func(p *api.Pool) { p.Usage, p.CreateIndex, p.ModifyIndex = api.PoolUsage{}, 0, 0 })
	roundTrip(t, "node service", serviceToAPI, func(in api.NodeService) (fsm.NodeService, error) { return serviceFromAPI(in.ID, in) },
		func(s *api.NodeService) { s.CreateIndex, s.ModifyIndex = 0, 0 })
	st := fsm.New(fsm.Config{}).State()
	nodeToAPI := func(n *fsm.Node) api.NodeSpec { return nodeView{st: st}.node(n).NodeSpec }
	roundTrip(t, "node", nodeToAPI, func(in api.NodeSpec) (fsm.Node, error) { return nodeFromAPI(in.ID, in) }, func(*api.NodeSpec) {})
}

// TestReadsSetEveryField: a read of an FSM value with every field set
// leaves no API field zero, except the ones that come from elsewhere.
func TestReadsSetEveryField(t *testing.T) {
	st := fsm.New(fsm.Config{}).State()
	b := fill.New[fsm.Bundle](0)
	n := fill.New[fsm.Node](0)
	n.UtilizationCap = 1000               // allocatable is a product: keep it above the resolution
	n.Usage.Cores = ledger.CoreSet{0b110} // cores 1 and 2: core 0 would read as a zero
	reads := map[string]struct {
		v      any
		exempt []string
	}{
		// Index 0 and the backup's epoch are zero by definition.
		"bundle": {bundleToAPI(b), []string{".Replicas[0].Index", ".Replicas[1].Epoch"}},
		// The tier (and whether the node is outside the pool's tiers) and
		// the assignment count come from the pool and the assignments
		// table, not from the node.
		"node":          {nodeView{st: st, lastSeen: map[string]time.Time{n.ID: time.Unix(1, 0)}}.node(n), []string{".Tier", ".OutsideTiers", ".Assignments"}},
		"assignment":    {assignmentToAPI(fill.New[fsm.Assignment](0)), nil},
		"event":         {eventToAPI(*fill.New[fsm.Event](0)), nil},
		"acl token":     {aclTokenToAPI(fill.New[fsm.ACLToken](0)), nil},
		"pool node":     {poolStatusToAPI(&fsm.PoolStatus{Pool: &fsm.Pool{}, Nodes: []fsm.PoolNodeStatus{*fill.New[fsm.PoolNodeStatus](0)}}).Nodes[0], nil},
		"explain":       {explainToAPI(fill.New[fsm.Explain](0)), nil},
		"node service":  {serviceToAPI(fill.New[fsm.NodeService](0)), nil},
		"pool":          {poolToAPI(fill.New[fsm.Pool](0)), nil},
		"bundle (spec)": {specToAPI(&b.Spec), nil},
	}
	for name, r := range reads {
		if z := fill.Zeros(r.v); !slices.Equal(z, r.exempt) && (len(z) != 0 || r.exempt != nil) {
			t.Errorf("%s: API fields left zero: %v (expected only %v)", name, z, r.exempt)
		}
	}
}
