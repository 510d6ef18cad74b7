package scheduler

import (
	"reflect"

	"github.com/amserver/amserver/fsm"
)

// Result is the outcome of placing (or healing) one bundle.
type Result struct {
	BundleID string
	// Update is the bundle's change, already added to the batch's plan; nil
	// when nothing would change.
	Update *fsm.BundleUpdate
	// PrimaryPlaced and BackupPlaced say whether each replica is complete
	// after the update (BackupPlaced is false without resilience).
	PrimaryPlaced bool
	BackupPlaced  bool
	// JobsPlaced counts the update's placements.
	JobsPlaced int
	// Degradations is the bundle's degradation list after the update.
	Degradations []fsm.Degradation
	// Explain says why the primary is not placed; BackupExplain why there
	// is no backup (noBackup).
	Explain       *fsm.Explain
	BackupExplain *fsm.Explain
	// BudgetExhausted is set when a search gave up on its budget.
	BudgetExhausted bool
	// Incomplete lists a service's replica slots left incomplete.
	Incomplete []int
	// Victims are the replicas a preemption evicts (Preempt only), in the
	// order they were preferred.
	Victims []Victim
}

// Place places what is missing of a bundle: the primary's unplaced jobs as a
// gang (nothing of it if it does not fit whole), then the backup's through
// the resilience ladder. Already placed jobs stay where they are and pin
// their co-location groups. A bundle that is complete, deleting or gains
// nothing gets no update.
func (b *Batch) Place(bundle *fsm.Bundle) Result {
	if bundle.Deleting || len(bundle.Replicas) == 0 {
		return Result{BundleID: bundle.ID()}
	}
	if bundle.Spec.IsService() {
		return b.placeService(bundle)
	}
	res, places := b.fill(bundle)
	if !res.PrimaryPlaced {
		return b.unplaceable(bundle, res, res.Explain)
	}
	if len(places) == 0 && bundle.Explain == nil && sameCodes(bundle.Degradations, res.Degradations) {
		return res // only a message would change (a retried noBackup): no churn
	}
	res.Update = &fsm.BundleUpdate{
		BundleID: bundle.ID(), Place: places, SetDegradations: true, Degradations: res.Degradations,
	}
	b.addPart(res.Update)
	return res
}

// fill places what is missing of a bundle's replicas and reserves it in the
// overlay: the primary's unplaced jobs as a gang (when they do not fit,
// nothing is reserved and res.Explain says why), then the backup's down the
// ladder. It adds no plan part, so repair, drain and preemption can run it
// on the bundle as it will be once their releases and promotion apply, and
// compose their own update around it.
func (b *Batch) fill(bundle *fsm.Bundle) (Result, []fsm.Place) {
	if bundle.Spec.IsService() {
		return b.fillService(bundle)
	}
	res := Result{BundleID: bundle.ID()}
	spec := &bundle.Spec
	seed := b.bundleSeed(bundle)
	prim := b.placePrimary(bundle, seed, false)
	res.BudgetExhausted = prim.BudgetExhausted
	if !prim.Placed {
		res.Explain = prim.Explain
		return res, nil
	}
	if err := b.reserve(bundle.ID(), prim.Places); err != nil {
		res.Explain = internalExplain(err)
		return res, nil
	}
	res.PrimaryPlaced = true
	places := prim.Places
	var back *GangResult
	if len(bundle.Replicas) > 1 && spec.Resilience != nil {
		r := b.placeBackup(spec, &bundle.Replicas[1], prim, seed)
		back = &r
		res.BudgetExhausted = res.BudgetExhausted || r.BudgetExhausted
		if r.Placed && b.reserve(bundle.ID(), r.Places) == nil {
			places = append(places, r.Places...)
			res.BackupPlaced = true
		} else {
			r.Placed = false
			res.BackupExplain = r.Explain
		}
	}
	res.Degradations = b.degradations(spec, prim, back)
	res.JobsPlaced = len(places)
	return res, places
}

// placePrimary places the primary's missing jobs. When the backup still
// holds jobs (a repair that could not promote, a primary evicted with no
// backup to take over) the forbids bind the primary too, since they are
// symmetric: its new jobs go down the ladder away from the backup's
// domains, so the pair stays apart wherever there is room.
func (b *Batch) placePrimary(bundle *fsm.Bundle, seed uint64, noExplain bool) GangResult {
	spec, rep := &bundle.Spec, &bundle.Replicas[0]
	if spec.Resilience != nil && len(bundle.Replicas) > 1 && !rep.Complete() {
		if other := placedOf(&bundle.Replicas[1]); len(other) > 0 {
			return b.climb(spec, rep, b.domainsOf(other), seed, noExplain)
		}
	}
	return b.placeReplica(spec, rep, Forbid{}, seed, noExplain)
}

// placeReplica places a replica's missing jobs, or describes it as it is
// when it is complete.
func (b *Batch) placeReplica(spec *fsm.BundleSpec, rep *fsm.Replica, forbid Forbid, seed uint64, noExplain bool) GangResult {
	placed := placedOf(rep)
	if rep.Complete() && len(placed) == len(spec.Jobs) {
		return GangResult{Placed: true, Nodes: placed, SpansAZ: b.spansAZ(placed)}
	}
	g := Gang{Spec: spec, Slot: rep.Slot, Placed: placed, Forbid: forbid, Removed: b.removed, NoExplain: noExplain}
	return b.snap.PlaceGang(b.overlay, g, derive(seed, uint64(rep.Slot)))
}

// placedOf maps a replica's placed jobs to their nodes.
func placedOf(rep *fsm.Replica) map[string]string {
	placed := map[string]string{}
	for _, j := range rep.Jobs {
		if j.Placed() {
			placed[j.Name] = j.NodeID
		}
	}
	return placed
}

// unplaceable records why the primary cannot be placed, unless the bundle
// already says exactly that.
func (b *Batch) unplaceable(bundle *fsm.Bundle, res Result, ex *fsm.Explain) Result {
	res.Explain = ex
	res.Degradations = bundle.Degradations
	if bundle.State == fsm.StateUnplaceable && reflect.DeepEqual(bundle.Explain, ex) {
		return res
	}
	res.Update = &fsm.BundleUpdate{BundleID: bundle.ID(), Explain: ex}
	b.addPart(res.Update)
	return res
}

func internalExplain(err error) *fsm.Explain {
	return &fsm.Explain{Filtered: map[string]int{}, NearestMiss: &fsm.NearestMiss{Stage: "internal", Detail: err.Error()}}
}

func (b *Batch) spansAZ(nodes map[string]string) bool {
	first, seen := "", false
	for _, id := range nodes { // order-free: only compares
		az := ""
		if n := b.snap.idx.node(id); n != nil {
			az = n.az
		}
		if seen && az != first {
			return true
		}
		first, seen = az, true
	}
	return false
}

func sameCodes(a, b []fsm.Degradation) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Code != b[i].Code {
			return false
		}
	}
	return true
}
