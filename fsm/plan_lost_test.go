package fsm

import (
	"testing"

	"github.com/hashicorp/go-msgpack/v2/codec"

	"github.com/amserver/amserver/ledger"
)

// TestPlanLostNodeBack: a failover part that releases a job on a node the
// plan treats as lost commits while the node is down or left, and is
// rejected, changing nothing, once the node is ready or suspect again. A
// plan without Lost (an older leader's) commits as it did.
func TestPlanLostNodeBack(t *testing.T) {
	for _, tc := range []struct {
		name, status string
		lost         []string
		commits      bool
	}{
		{"still down", NodeDown, []string{"n1"}, true},
		{"left", NodeLeft, []string{"n1"}, true},
		{"ready again", NodeReady, []string{"n1"}, false},
		{"suspect again", NodeSuspect, []string{"n1"}, false},
		{"another node lost", NodeReady, []string{"n2"}, true},
		{"older leader's plan", NodeReady, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := planFixture(t)
			h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{place("a", 0, "n1", ledger.Grant{Capacity: 1000})}})
			h.ok(NodeStatusType, &NodeStatusRequest{NodeID: "n1", Status: NodeDown})
			if tc.status != NodeDown {
				h.ok(NodeStatusType, &NodeStatusRequest{NodeID: "n1", Status: tc.status})
			}
			before := stateHash(t, h.fsm)
			repair := PlanPart{Updates: []BundleUpdate{{BundleID: "a", Release: []SlotJob{{Slot: 0, Job: "j"}}}}}
			pr := h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{repair}, Lost: tc.lost}).Value.(*PlanResult)
			if got := len(pr.Committed) == 1; got != tc.commits {
				t.Fatalf("committed %v, want %v: %+v", got, tc.commits, pr)
			}
			if tc.commits {
				if h.fsm.State().Bundle("a").Replicas[0].Jobs[0].NodeID != "" {
					t.Fatal("the committed repair left the job on n1")
				}
				return
			}
			if pr.Rejected[0].Exhausted || stateHash(t, h.fsm) != before {
				t.Fatalf("rejection %+v; state changed: %v", pr.Rejected, stateHash(t, h.fsm) != before)
			}
			checkInvariants(t, h.fsm)
		})
	}
}

// TestPlanLostReadsOnOlderServers: a plan without Lost encodes as before
// the field, and an older server decodes one with it.
func TestPlanLostReadsOnOlderServers(t *testing.T) {
	type before struct { // Plan before Lost
		Now   int64
		Parts []PlanPart
		Basis uint64
	}
	parts := []PlanPart{place("a", 0, "n1", ledger.Grant{Capacity: 1000})}
	old, err := Encode(ApplyPlanType, &before{Now: 9, Parts: parts, Basis: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, lost := range [][]string{nil, {"n1", "n2"}} {
		b, err := Encode(ApplyPlanType, &Plan{Now: 9, Parts: parts, Basis: 4, Lost: lost})
		if err != nil {
			t.Fatal(err)
		}
		if lost == nil && string(b) != string(old) {
			t.Fatal("a plan without Lost is encoded differently from before the field")
		}
		var o before
		if err := codec.NewDecoderBytes(b[1:], msgpackHandle).Decode(&o); err != nil || o.Now != 9 || o.Basis != 4 || len(o.Parts) != 1 {
			t.Fatalf("Lost %v, decoded by an older server: %v %+v", lost, err, o)
		}
	}
}
