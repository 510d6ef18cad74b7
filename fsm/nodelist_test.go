package fsm

import "testing"

// TestNodeListingCache: Nodes("") from a State reuses the listing while the
// nodes table is unchanged, never lets a caller's edits leak into it, and
// sees every node write.
func TestNodeListingCache(t *testing.T) {
	h := newHarness(t)
	h.readyNode(testNode("n1", "p", "az1", "c1", 4000, 4))
	h.readyNode(testNode("n2", "p", "az1", "c1", 4000, 4))
	first := h.fsm.State().Nodes("")
	first[0] = nil // a caller's edit
	again := h.fsm.State().Nodes("")
	if len(again) != 2 || again[0] == nil || again[0].ID != "n1" {
		t.Fatalf("cached listing was changed by a caller: %+v", again)
	}
	h.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle("b1", "p", testJob("j", 100, 0))})
	if got := h.fsm.State().Nodes(""); got[1] != again[1] {
		t.Fatal("a write to another table changed the listing's nodes")
	}
	h.ok(NodeCordonType, &NodeFlagRequest{NodeID: "n2", On: true})
	if got := h.fsm.State().Nodes(""); !got[1].Cordoned {
		t.Fatal("listing missed a node write")
	}
	h.readyNode(testNode("n3", "p", "az1", "c1", 4000, 4))
	if got := h.fsm.State().Nodes(""); len(got) != 3 {
		t.Fatalf("listing missed a new node: %d nodes", len(got))
	}
}
