package scheduler

import (
	"fmt"
	"slices"
	"strings"

	"github.com/amserver/amserver/fsm"
)

// rung is one step of the resilience ladder (DESIGN §3.4): which of the
// bundle's forbids the backup must still honour.
type rung struct {
	node, az, cloud bool
}

// ladder lists the rungs from every forbid honoured to none: sameCloud is
// relaxed first, then sameAz, then sameNode. Rules the bundle allows are
// never honoured, so rungs that would repeat one are skipped.
func ladder(r *fsm.Resilience) []rung {
	full := rung{node: r.SameNode == fsm.Forbid, az: r.SameAz == fsm.Forbid, cloud: r.SameCloud == fsm.Forbid}
	out := []rung{full}
	step := full
	for _, drop := range []func(*rung){
		func(x *rung) { x.cloud = false },
		func(x *rung) { x.az = false },
		func(x *rung) { x.node = false },
	} {
		drop(&step)
		if step != out[len(out)-1] {
			out = append(out, step)
		}
	}
	return out
}

// domains are the failure domains a replica occupies, sorted.
type domains struct {
	nodes, azs, clouds []string
}

func (b *Batch) domainsOf(nodes map[string]string) domains {
	var d domains
	for _, id := range nodes { // collected, then sorted
		d.nodes = append(d.nodes, id)
		if n := b.snap.idx.node(id); n != nil {
			d.azs = append(d.azs, n.az)
			d.clouds = append(d.clouds, n.cloud)
		}
	}
	for _, l := range []*[]string{&d.nodes, &d.azs, &d.clouds} {
		slices.Sort(*l)
		*l = slices.Compact(*l)
	}
	return d
}

func (d domains) forbid(r rung) Forbid {
	var f Forbid
	if r.node {
		f.Nodes = d.nodes
	}
	if r.az {
		f.AZs = d.azs
	}
	if r.cloud {
		f.Clouds = d.clouds
	}
	return f
}

// placeBackup places the backup's missing jobs down the ladder: the first
// rung that fits wins. When none does, the result explains the last rung
// (no forbids: there is simply no room).
func (b *Batch) placeBackup(spec *fsm.BundleSpec, rep *fsm.Replica, prim GangResult, seed uint64) GangResult {
	if rep.Complete() {
		return b.placeReplica(spec, rep, Forbid{}, seed, true)
	}
	return b.climb(spec, rep, b.domainsOf(prim.Nodes), seed, false)
}

// climb tries the rungs in order. Only when every rung fails is the last one
// (no forbids: there is simply no room) searched again for its explanation,
// so the common case never pays the O(nodes) explanation pass.
func (b *Batch) climb(spec *fsm.BundleSpec, rep *fsm.Replica, prim domains, seed uint64, noExplain bool) GangResult {
	var last GangResult
	exhausted := false
	rungs := ladder(spec.Resilience)
	for _, r := range rungs {
		last = b.placeReplica(spec, rep, prim.forbid(r), seed, true)
		exhausted = exhausted || last.BudgetExhausted
		if last.Placed {
			last.BudgetExhausted = exhausted
			return last
		}
	}
	if !noExplain {
		last = b.placeReplica(spec, rep, prim.forbid(rungs[len(rungs)-1]), seed, false)
	}
	last.BudgetExhausted = exhausted
	return last
}

// degradations derives the bundle's degradation list from where its
// replicas are, so it is right whichever rung placed the backup and whether
// it was placed now or earlier: a forbid is reported broken only if the
// placement actually shares that domain with the primary.
func (b *Batch) degradations(spec *fsm.BundleSpec, prim GangResult, back *GangResult) []fsm.Degradation {
	var out []fsm.Degradation
	if spec.Placement.SameAz == fsm.SameAzSoft {
		var who []string
		if prim.SpansAZ {
			who = append(who, "primary")
		}
		if back != nil && back.Placed && back.SpansAZ {
			who = append(who, "backup")
		}
		if len(who) > 0 {
			verb := " spans"
			if len(who) > 1 {
				verb = " each span"
			}
			out = append(out, fsm.Degradation{Code: fsm.DegradeReplicaSpansAz,
				Message: strings.Join(who, " and ") + verb + " more than one AZ (sameAz soft)"})
		}
	}
	r := spec.Resilience
	if r == nil || back == nil {
		return out
	}
	if !back.Placed {
		return append(out, fsm.Degradation{Code: fsm.DegradeNoBackup, Message: "no room for a backup: " + Summary(back.Explain)})
	}
	return append(out, b.sharedDomains(r, b.domainsOf(prim.Nodes), b.domainsOf(back.Nodes))...)
}

func (b *Batch) sharedDomains(r *fsm.Resilience, p, q domains) []fsm.Degradation {
	var out []fsm.Degradation
	check := func(rule, code, what string, pl, ql []string) {
		if rule != fsm.Forbid {
			return
		}
		if shared := intersect(pl, ql); len(shared) > 0 {
			out = append(out, fsm.Degradation{Code: code,
				Message: fmt.Sprintf("backup shares %s %s with the primary", what, strings.Join(quoted(shared), ", "))})
		}
	}
	check(r.SameCloud, fsm.DegradeBackupSameCld, "cloud", p.clouds, q.clouds)
	check(r.SameAz, fsm.DegradeBackupSameAz, "az", p.azs, q.azs)
	check(r.SameNode, fsm.DegradeBackupSameNode, "node", p.nodes, q.nodes)
	return out
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if _, found := slices.BinarySearch(b, x); found {
			out = append(out, x)
		}
	}
	return out
}

func quoted(l []string) []string {
	out := make([]string, len(l))
	for i, s := range l {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// severity weighs the backup degradations in ladder order (a shared node is
// worse than a shared AZ, which is worse than a shared cloud), so healing
// can tell whether a new placement honours more of what matters.
func severity(ds []fsm.Degradation) int {
	w := map[string]int{fsm.DegradeBackupSameCld: 1, fsm.DegradeBackupSameAz: 2, fsm.DegradeBackupSameNode: 4, fsm.DegradeNoBackup: 8}
	sum := 0
	for _, d := range ds {
		sum += w[d.Code]
	}
	return sum
}
