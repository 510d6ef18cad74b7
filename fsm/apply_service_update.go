package fsm

import (
	"slices"

	"github.com/amserver/amserver/ledger"
)

// applyServiceUpdate carries a replaced node service to its instances
// (UpsertServiceRequest.Update); svc is the new record, already written.
//
//   - A new request (requirements, consumes) stops every instance and
//     releases its reservation: an instance's grant is exactly its
//     service's request (checkServiceGrant), so the leader places it again
//     with the new one once its worker reports it stopped.
//   - A new launch relaunches each instance in place at its next
//     generation, as a bundle's in-place launch change does (relaunchWith);
//     where the node cannot run the new launch's runtime it is stopped
//     instead, and the leader places it where it can.
//   - New provides show on the nodes that show the old ones, and what is
//     no longer provided is withdrawn (reprovide).
func (t *tx) applyServiceUpdate(old, svc *NodeService) {
	relaunch := !sameJSON(old.Launch, svc.Launch)
	regrant := !sameJSON(old.Request(), svc.Request())
	reprovide := !slices.EqualFunc(old.Provides, svc.Provides, capabilityEqual)
	if !relaunch && !regrant && !reprovide {
		return
	}
	need, runtime := ServiceRuntimeNeed(svc), LaunchRuntime(&svc.Launch, nil)
	var relaunched, stopped int
	for _, a := range t.ServiceAssignments(svc.ID) {
		if a.Desired != DesiredRun {
			continue
		}
		n := t.State.Node(a.NodeID)
		switch {
		case regrant || (relaunch && (n == nil || !n.RuntimeSet().Fits(need))):
			ledger.Release(t.ledgerStore(), ServiceKey(svc.ID, a.NodeID))
			t.stopInstance(svc.ID, a.NodeID)
			stopped++
		case relaunch:
			t.relaunchWith(a, &svc.Launch, runtime, a.Generation+1)
			relaunched++
		}
	}
	if reprovide {
		t.reprovide(old, svc)
	}
	t.event("serviceUpdated", "", "", "node service %s updated: %d instances relaunched in place, %d stopped to be placed again",
		svc.ID, relaunched, stopped)
}

// reprovide shows svc's new provides on every node of the old pools that
// shows the old ones (an eager instance running there, a lazy offer),
// releasing the consumers' reservations that no longer fit, as a
// withdrawal does. The leader withdraws offers that no longer belong.
func (t *tx) reprovide(old, svc *NodeService) {
	for _, pool := range old.Pools {
		for _, n := range t.Nodes(pool) {
			if n.Provided[svc.ID] == nil {
				continue
			}
			if len(svc.Provides) == 0 {
				t.withdrawProvided(n.ID, svc.ID)
				continue
			}
			t.offerProvided(n.ID, svc)
			t.releaseUnfit(n.ID, "capability provided by service "+svc.ID+" changed")
		}
	}
}
