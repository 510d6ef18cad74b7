package check

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/e2e/workload"
)

// Degradation codes that relax a backup's resilience forbids (fsm/types.go,
// written by scheduler/resilience.go when the backup actually shares that
// domain with the primary).
const (
	DegradeBackupSameNode  = "backupSameNode"
	DegradeBackupSameAz    = "backupSameAz"
	DegradeBackupSameCloud = "backupSameCloud"
)

// Placement checks every sample that read cleanly against the ledger and
// placement invariants: no node over-committed (capacity, pinned cores,
// GPUs), at most one primary per bundle and at replicas[0], backups
// honouring their forbids unless the matching degradation is recorded,
// and (linearizable samples only) no bundle's epoch going back in time.
func Placement(samples []workload.Sample) Result {
	c := newCollector("placement")
	for i := range samples {
		s := &samples[i]
		if s.Error != "" {
			continue
		}
		c.checked++
		checkSample(c, s)
	}
	checkEpochs(c, samples)
	return c.result()
}

// milli converts an API quantity to the FSM's integer milli-units, so
// sums compare exactly as the ledger does.
func milli(x float64) int64 { return int64(math.Round(x * 1000)) }

func sampleName(s *workload.Sample) string {
	kind := "default"
	if s.Stale {
		kind = "stale"
	}
	return fmt.Sprintf("%s sample of %s at %s (index %d)", kind, s.Server, time.Duration(s.Call), s.Index)
}

// holder names one placed job.
type holder struct {
	bundle  string
	replica int
	job     string
}

func (h holder) String() string { return fmt.Sprintf("%s/%d/%s", h.bundle, h.replica, h.job) }

// nodeUse is what the sample's bundles pin on one node. Capacity is not
// summed here: nodes and bundles are two reads, and a node resized between
// them would look over-committed; each node's reserved figure, from the
// same read as its allocatable, is checked instead.
type nodeUse struct {
	cores     map[int]holder
	exclusive map[int]holder
	shares    map[int]int64 // GPU index → milli
	sharedBy  map[int]holder
}

func checkSample(c *collector, s *workload.Sample) {
	where := sampleName(s)
	nodes := make(map[string]*api.Node, len(s.Nodes))
	for i := range s.Nodes {
		n := &s.Nodes[i]
		nodes[n.ID] = n
		if r, a := milli(n.Reserved.Capacity), milli(n.Allocatable); r > a {
			c.kindf(KindOverCommit, "%s: node %s reports reserved capacity %.3f > allocatable %.3f", where, n.ID, n.Reserved.Capacity, n.Allocatable)
		}
	}
	use := map[string]*nodeUse{}
	for i := range s.Bundles {
		b := &s.Bundles[i]
		checkRoles(c, where, b)
		checkResilience(c, where, b, nodes)
		addUse(c, where, b, nodes, use)
	}
	for _, id := range slices.Sorted(maps.Keys(use)) {
		checkNodeUse(c, where, nodes[id], use[id])
	}
}

// addUse adds a bundle's placed jobs to their nodes' usage, checking
// pinned cores and exclusive GPUs as it goes. Jobs on a node the sample
// does not list are skipped: nodes and bundles are two reads, and a node
// may register between them.
func addUse(c *collector, where string, b *api.Bundle, nodes map[string]*api.Node, use map[string]*nodeUse) {
	jobs := map[string]bool{}
	for _, j := range b.Jobs {
		jobs[j.Name] = true
	}
	for ri, r := range b.Replicas {
		for _, j := range r.Jobs {
			if j.NodeID == "" || nodes[j.NodeID] == nil {
				continue
			}
			h := holder{bundle: b.ID, replica: ri, job: j.Name}
			if !jobs[j.Name] {
				c.addf("%s: %s is placed on %s but bundle %s has no job %q", where, h, j.NodeID, b.ID, j.Name)
			}
			u := use[j.NodeID]
			if u == nil {
				u = &nodeUse{cores: map[int]holder{}, exclusive: map[int]holder{}, shares: map[int]int64{}, sharedBy: map[int]holder{}}
				use[j.NodeID] = u
			}
			addDevices(c, where, j, h, u)
		}
	}
}

func addDevices(c *collector, where string, j api.JobPlacement, h holder, u *nodeUse) {
	for _, core := range j.Cores {
		if other, dup := u.cores[core]; dup {
			c.kindf(KindOverCommit, "%s: node %s core %d pinned by both %s and %s", where, j.NodeID, core, other, h)
		}
		u.cores[core] = h
	}
	for _, g := range j.GPUs {
		if other, dup := u.exclusive[g]; dup {
			c.kindf(KindOverCommit, "%s: node %s exclusive GPU %d held by both %s and %s", where, j.NodeID, g, other, h)
		}
		u.exclusive[g] = h
	}
	if j.GPU != nil {
		u.shares[j.GPU.Index] += milli(j.GPU.Capacity)
		u.sharedBy[j.GPU.Index] = h
	}
}

// checkNodeUse compares what the bundles place on a node with its
// inventory.
func checkNodeUse(c *collector, where string, n *api.Node, u *nodeUse) {
	for _, core := range slices.Sorted(maps.Keys(u.cores)) {
		if core < 0 || core >= n.TotalCores {
			c.addf("%s: node %s core %d pinned by %s is outside 0..%d", where, n.ID, core, u.cores[core], n.TotalCores-1)
		}
	}
	gpus := map[int]api.GPU{}
	for _, g := range n.GPUs {
		gpus[g.Index] = g
	}
	for _, idx := range slices.Sorted(maps.Keys(u.exclusive)) {
		if _, ok := gpus[idx]; !ok {
			c.addf("%s: node %s has no GPU %d, held by %s", where, n.ID, idx, u.exclusive[idx])
		}
		if sharer, ok := u.sharedBy[idx]; ok {
			c.kindf(KindOverCommit, "%s: node %s GPU %d held exclusively by %s is also shared by %s", where, n.ID, idx, u.exclusive[idx], sharer)
		}
	}
	for _, idx := range slices.Sorted(maps.Keys(u.shares)) {
		g, ok := gpus[idx]
		switch {
		case !ok:
			c.addf("%s: node %s has no GPU %d, shared by %s", where, n.ID, idx, u.sharedBy[idx])
		case u.shares[idx] > milli(g.TotalCapacity):
			c.kindf(KindOverCommit, "%s: node %s GPU %d over-committed: shares %.3f > capacity %.3f",
				where, n.ID, idx, float64(u.shares[idx])/1000, g.TotalCapacity)
		}
	}
}

// checkRoles: at most one primary, and it is replicas[0]; a placed or
// degraded bundle has its primary there.
func checkRoles(c *collector, where string, b *api.Bundle) {
	primaries := 0
	for i, r := range b.Replicas {
		if r.Role != api.RolePrimary {
			continue
		}
		primaries++
		if i != 0 {
			c.addf("%s: bundle %s has its primary at replicas[%d]", where, b.ID, i)
		}
	}
	if primaries > 1 {
		c.addf("%s: bundle %s has %d primaries", where, b.ID, primaries)
	}
	if b.State == api.StatePlaced || b.State == api.StateDegraded {
		if len(b.Replicas) == 0 || b.Replicas[0].Role != api.RolePrimary {
			c.addf("%s: bundle %s is %s but replicas[0] is not its primary", where, b.ID, b.State)
		}
	}
}
