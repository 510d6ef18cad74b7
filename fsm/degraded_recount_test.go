package fsm

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/go-msgpack/v2/codec"
)

var replicaCount = regexp.MustCompile(`\d+ of \d+`)

// TestDegradedRecount: a service short of replicas writes its degraded
// event when the shortfall begins and, in a new leader's plans
// (DegradedRecount), again whenever its count of complete replicas changes
// while it stays short; a plan that changes only the message writes none.
// An older leader's plans write it only when the shortfall begins, as
// before.
func TestDegradedRecount(t *testing.T) {
	for _, tc := range []struct {
		name    string
		recount bool
		want    []string // the degraded events' replica counts, in order
	}{
		{"new leader", true, []string{"2 of 3", "1 of 3", "2 of 3"}},
		{"older leader's plans", false, []string{"2 of 3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p"}})
			for _, n := range []string{"n1", "n2", "n3"} {
				h.readyNode(testNode(n, "p", "a", "x", 64000, 0))
			}
			spec := testBundle("s", "p", testJob("web", 1000, 0))
			spec.Kind, spec.Count = KindService, 3
			h.ok(CreateBundleType, &CreateBundleRequest{Spec: spec})
			short := func(placed int, why string) []Degradation {
				return []Degradation{{Code: DegradeReplicasMissing, Message: fmt.Sprintf("%d of 3 replicas placed: %s", placed, why)}}
			}
			plan := func(u BundleUpdate, lost ...string) {
				t.Helper()
				pr := h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{{Updates: []BundleUpdate{u}}}, Lost: lost, DegradedRecount: tc.recount}).Value.(*PlanResult)
				if len(pr.Committed) != 1 {
					t.Fatalf("plan rejected: %+v", pr.Rejected)
				}
			}
			place := func(slot int, node string, d []Degradation) BundleUpdate {
				u := h.placeAll("s", slot, node).Updates[0]
				u.SetDegradations, u.Degradations = true, d
				return u
			}
			first := place(0, "n1", short(2, "no room"))
			first.Place = append(first.Place, h.placeAll("s", 1, "n2").Updates[0].Place...)
			plan(first)
			plan(BundleUpdate{BundleID: "s", SetDegradations: true, Degradations: short(2, "another reason")})
			h.ok(NodeStatusType, &NodeStatusRequest{NodeID: "n2", Status: NodeDown})
			plan(BundleUpdate{BundleID: "s", Release: []SlotJob{{Slot: 1, Job: "web"}}, SetDegradations: true,
				Degradations: short(1, "n2 down")}, "n2")
			plan(place(1, "n3", short(2, "no room")))
			plan(place(2, "n1", nil))
			var got []string
			healed := 0
			for _, e := range h.fsm.State().Events(0, 1000) {
				switch e.Type {
				case "degraded":
					got = append(got, replicaCount.FindString(e.Message))
				case "healed":
					healed++
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("degraded events at %q, want %q", got, tc.want)
			}
			if healed != 1 {
				t.Fatalf("%d healed events, want 1", healed)
			}
			checkInvariants(t, h.fsm)
		})
	}
}

// TestDegradedRecountReadsOnOlderServers: a plan without DegradedRecount
// is encoded as before the field, byte for byte, and one with it decodes on
// a server from before the field as the same plan.
func TestDegradedRecountReadsOnOlderServers(t *testing.T) {
	type before struct { // Plan before DegradedRecount
		Now        int64
		Parts      []PlanPart
		Basis      uint64
		Lost       []string    `json:",omitempty"`
		DrainWaits []DrainWait `json:",omitempty"`
	}
	parts := []PlanPart{{Updates: []BundleUpdate{upd("x", jobOn(0, "a", "n1"))}}}
	old, err := Encode(ApplyPlanType, &before{Now: 9, Parts: parts, Basis: 3, Lost: []string{"n2"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, recount := range []bool{false, true} {
		b, err := Encode(ApplyPlanType, &Plan{Now: 9, Parts: parts, Basis: 3, Lost: []string{"n2"}, DegradedRecount: recount})
		if err != nil {
			t.Fatal(err)
		}
		if !recount && string(b) != string(old) {
			t.Fatal("a plan without DegradedRecount is encoded differently from before the field")
		}
		var o before
		if err := codec.NewDecoderBytes(b[1:], msgpackHandle).Decode(&o); err != nil || o.Now != 9 || o.Basis != 3 ||
			len(o.Parts) != 1 || o.Parts[0].Updates[0].BundleID != "x" || len(o.Lost) != 1 {
			t.Fatalf("DegradedRecount %v, decoded by an older server: %v %+v", recount, err, o)
		}
	}
}
