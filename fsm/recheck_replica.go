package fsm

import (
	"github.com/amserver/amserver/internal/plant"
)

// replicaCheck is one hard rule about a replica's placement as a whole, run
// on the bundle as an update leaves it (releases, promotion, placements and
// degradations applied), for the replicas the update places jobs in.
type replicaCheck struct {
	name  string
	check func(t *tx, b *Bundle, r *Replica) error
}

var replicaChecks = []replicaCheck{
	{"coLocateWith", checkCoLocation},
	{"separateFrom", checkSeparation},
	{"sameAz", checkSameAz},
	{"antiAffinity", checkForbids},
}

// recheckReplicas runs every replicaCheck on the replicas u places into.
func (t *tx) recheckReplicas(b *Bundle, u *BundleUpdate) error {
	if len(u.Place) == 0 || plant.Active(plant.SkipRecheck) {
		return nil
	}
	slots := make(map[int]bool, len(u.Place)) // a service places thousands of replicas at once
	for _, p := range u.Place {
		slots[p.Slot] = true
	}
	for i := range b.Replicas {
		r := &b.Replicas[i]
		if !slots[r.Slot] {
			continue
		}
		for _, c := range replicaChecks {
			if err := c.check(t, b, r); err != nil {
				return err
			}
		}
	}
	return t.checkSpread(b, u)
}

// checkSpread: no node holds more than maxPerNode of a service's replicas
// and no AZ more than maxPerAz, where the update places jobs. A replica
// counts once per node and AZ however many of its jobs are there. It runs
// once per update, over every replica, so a plan placing thousands of
// replicas costs one pass.
func (t *tx) checkSpread(b *Bundle, u *BundleUpdate) error {
	spec := &b.Spec
	if !spec.IsService() || (spec.MaxPerNode == 0 && spec.MaxPerAz == 0) {
		return nil
	}
	perNode, perAz := map[string]int{}, map[string]int{}
	for i := range b.Replicas {
		d := t.replicaDomains(&b.Replicas[i])
		for n := range d.nodes {
			perNode[n]++
		}
		for az := range d.azs {
			perAz[az]++
		}
	}
	for _, p := range u.Place {
		if spec.MaxPerNode > 0 && perNode[p.Node] > spec.MaxPerNode {
			return recheckf("maxPerNode", "bundle %s: node %s would hold %d replicas, maxPerNode is %d",
				b.ID(), p.Node, perNode[p.Node], spec.MaxPerNode)
		}
		n := t.State.Node(p.Node)
		if n == nil {
			continue
		}
		if az := n.AZ(); spec.MaxPerAz > 0 && perAz[az] > spec.MaxPerAz {
			return recheckf("maxPerAz", "bundle %s: az %q would hold %d replicas, maxPerAz is %d",
				b.ID(), az, perAz[az], spec.MaxPerAz)
		}
	}
	return nil
}

// coLocationRoots maps each job to its co-location group's root: coLocateWith
// is symmetric and transitive, and with sameNodeDefault the jobs naming
// neither rule form one group (DESIGN §3.3).
func coLocationRoots(spec *BundleSpec) map[string]string {
	parent := make(map[string]string, len(spec.Jobs))
	find := func(x string) string {
		for parent[x] != x {
			x = parent[x]
		}
		return x
	}
	for _, j := range spec.Jobs {
		parent[j.Name] = j.Name
	}
	bare := ""
	for _, j := range spec.Jobs {
		for _, other := range j.CoLocateWith {
			if _, ok := parent[other]; ok {
				parent[find(j.Name)] = find(other)
			}
		}
		if spec.Placement.SameNodeDefault && len(j.CoLocateWith) == 0 && len(j.SeparateFrom) == 0 {
			if bare != "" {
				parent[find(j.Name)] = find(bare)
			}
			bare = j.Name
		}
	}
	roots := make(map[string]string, len(parent))
	for name := range parent {
		roots[name] = find(name)
	}
	return roots
}

// checkCoLocation: the placed jobs of one co-location group share a node.
func checkCoLocation(_ *tx, b *Bundle, r *Replica) error {
	roots := coLocationRoots(&b.Spec)
	first := map[string]*JobPlacement{} // group root → its first placed job
	for i := range r.Jobs {
		j := &r.Jobs[i]
		if !j.Placed() {
			continue
		}
		root := roots[j.Name]
		f, ok := first[root]
		if !ok {
			first[root] = j
			continue
		}
		if f.NodeID != j.NodeID {
			return recheckf("coLocateWith", "bundle %s replica %d: jobs %s and %s must share a node, are on %s and %s",
				b.ID(), r.Slot, f.Name, j.Name, f.NodeID, j.NodeID)
		}
	}
	return nil
}

// checkSeparation: no two placed jobs that must be apart share a node.
func checkSeparation(_ *tx, b *Bundle, r *Replica) error {
	nodes := make(map[string]string, len(r.Jobs))
	for _, j := range r.Jobs {
		if j.Placed() {
			nodes[j.Name] = j.NodeID
		}
	}
	for _, j := range b.Spec.Jobs {
		for _, other := range j.SeparateFrom {
			if n, ok := nodes[j.Name]; ok && n == nodes[other] {
				return recheckf("separateFrom", "bundle %s replica %d: jobs %s and %s must not share a node, both are on %s",
					b.ID(), r.Slot, j.Name, other, n)
			}
		}
	}
	return nil
}

// checkSameAz: under sameAz hard every placed job is in one AZ.
func checkSameAz(t *tx, b *Bundle, r *Replica) error {
	if b.Spec.Placement.SameAz != SameAzHard {
		return nil
	}
	var az, at string
	for _, j := range r.Jobs {
		n := t.placedNode(j)
		if n == nil {
			continue
		}
		switch {
		case at == "":
			az, at = n.AZ(), n.ID
		case n.AZ() != az:
			return recheckf("sameAz", "bundle %s replica %d: sameAz is hard, but node %s is in az %q and node %s in %q",
				b.ID(), r.Slot, at, az, n.ID, n.AZ())
		}
	}
	return nil
}

// placedNode is the node a placed job holds, or nil.
func (t *tx) placedNode(j JobPlacement) *Node {
	if !j.Placed() {
		return nil
	}
	return t.State.Node(j.NodeID)
}

// checkForbids: a backup that shares a node, AZ or cloud with the primary
// where the bundle forbids it is valid only when the bundle records the
// matching degradation: the resilience ladder relaxes forbids on purpose
// and says so (DESIGN §3.4), and a plan that did not is stale. Only a
// complete backup is one: the jobs a repair leaves of a backup it could not
// complete protect nothing, and the bundle says noBackup.
func checkForbids(t *tx, b *Bundle, _ *Replica) error {
	res := b.Spec.Resilience
	if res == nil || len(b.Replicas) < 2 || !b.Replicas[0].Complete() || !b.Replicas[1].Complete() {
		return nil
	}
	prim, back := t.replicaDomains(&b.Replicas[0]), t.replicaDomains(&b.Replicas[1])
	rules := []struct {
		rule, code, what string
		p, q             map[string]bool
	}{
		{res.SameNode, DegradeBackupSameNode, "node", prim.nodes, back.nodes},
		{res.SameAz, DegradeBackupSameAz, "az", prim.azs, back.azs},
		{res.SameCloud, DegradeBackupSameCld, "cloud", prim.clouds, back.clouds},
	}
	for _, x := range rules {
		if x.rule != Forbid || b.HasDegradation(x.code) {
			continue
		}
		for _, d := range sortedKeys(x.q) {
			if x.p[d] {
				return recheckf("antiAffinity", "bundle %s: the backup shares %s %q with the primary, which resilience forbids, and the plan records no %s",
					b.ID(), x.what, d, x.code)
			}
		}
	}
	return nil
}

// failureDomains are the nodes, AZs and clouds a replica's placed jobs use.
type failureDomains struct {
	nodes, azs, clouds map[string]bool
}

func (t *tx) replicaDomains(r *Replica) failureDomains {
	d := failureDomains{nodes: map[string]bool{}, azs: map[string]bool{}, clouds: map[string]bool{}}
	for _, j := range r.Jobs {
		if n := t.placedNode(j); n != nil {
			d.nodes[n.ID], d.azs[n.AZ()], d.clouds[n.Cloud()] = true, true, true
		}
	}
	return d
}
