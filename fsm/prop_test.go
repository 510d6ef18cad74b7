package fsm

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/hashicorp/raft"
	"pgregory.net/rapid"

	"github.com/amserver/amserver/ledger"
)

var (
	propNodes   = []string{"n1", "n2", "n3", "n4"}
	propBundles = []string{"b1", "b2", "b3", "b4", "b5"}
)

// genCommand draws one command, looking at the current state so that plans
// and reports are often meaningful (and sometimes deliberately stale).
func genCommand(t *rapid.T, st *State, now int64) (MessageType, any) {
	switch rapid.IntRange(0, 21).Draw(t, "kind") {
	case 0:
		return RegisterNodeType, &RegisterNodeRequest{Node: genNode(t), Now: now}
	case 1:
		status := rapid.SampledFrom([]string{NodeReady, NodeReady, NodeSuspect, NodeDown}).Draw(t, "status")
		return NodeStatusType, &NodeStatusRequest{NodeID: rapid.SampledFrom(propNodes).Draw(t, "node"), Status: status, Now: now}
	case 2:
		return NodeCordonType, &NodeFlagRequest{NodeID: rapid.SampledFrom(propNodes).Draw(t, "node"), On: rapid.Bool().Draw(t, "on")}
	case 3, 4, 11:
		return CreateBundleType, &CreateBundleRequest{Spec: genSpec(t), Now: now}
	case 5:
		return ReplaceBundleType, &ReplaceBundleRequest{Spec: genSpec(t), Now: now}
	case 6:
		return DeleteBundleType, &DeleteBundleRequest{ID: rapid.SampledFrom(propBundles).Draw(t, "bundle"), Now: now}
	case 7:
		return PurgeBundleType, &PurgeBundleRequest{ID: rapid.SampledFrom(propBundles).Draw(t, "bundle"), Now: now}
	case 8, 9, 12, 13, 14:
		return ApplyPlanType, genPlan(t, st, now)
	case 10:
		return genReport(t, st, now)
	case 16:
		return SetCapsType, &SetCapsRequest{Caps: genClusterCaps(t)}
	case 17: // join or leave cap group g (refused when g's caps cannot hold the pool)
		return UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p", CapGroup: rapid.SampledFrom([]string{"", "g"}).Draw(t, "capGroup"),
			Caps: ledger.PoolCaps{MaxCapacity: rapid.Int64Range(0, 20000).Draw(t, "poolcap")}}}
	case 18:
		return UpsertServiceType, &UpsertServiceRequest{Service: genService(t), Update: rapid.Bool().Draw(t, "update")}
	case 19:
		return ServiceOfferType, genOffers(t)
	case 20, 21:
		return ApplyPlanType, genServicePlan(t, st, now)
	default:
		return TimerType, &TimerRequest{Now: now, Start: propBundles, Stop: propBundles}
	}
}

// genClusterCaps draws cluster and group caps, often none, sometimes below
// what is held (then the command is refused and changes nothing).
func genClusterCaps(t *rapid.T) ClusterCaps {
	draw := func(label string) ledger.PoolCaps {
		if rapid.Bool().Draw(t, label+"Capped") {
			return ledger.PoolCaps{}
		}
		return ledger.PoolCaps{MaxCapacity: rapid.Int64Range(0, 6000).Draw(t, label+"Cap"), MaxCores: rapid.IntRange(0, 4).Draw(t, label+"Cores")}
	}
	c := ClusterCaps{Caps: draw("cluster")}
	if g := draw("group"); g != (ledger.PoolCaps{}) {
		c.Groups = map[string]ledger.PoolCaps{"g": g}
	}
	return c
}

func genNode(t *rapid.T) Node {
	return Node{
		ID: rapid.SampledFrom(propNodes).Draw(t, "node"), Pool: "p",
		Labels:         map[string]string{"az": rapid.SampledFrom([]string{"az1", "az2"}).Draw(t, "az")},
		TotalCapacity:  rapid.Int64Range(1000, 8000).Draw(t, "cap"),
		UtilizationCap: rapid.Int64Range(500, 1000).Draw(t, "util"),
		TotalCores:     rapid.IntRange(0, 8).Draw(t, "cores"),
		TotalMemoryMiB: rapid.Int64Range(0, 8).Draw(t, "mem") * 1024,
		GPUs:           []ledger.GPU{{Index: 0, Model: "t4", Capacity: 1000}},
		Capabilities:   []ledger.Capability{{Name: "nic", Count: rapid.Int64Range(0, 3).Draw(t, "nics")}},
	}
}

func genSpec(t *rapid.T) BundleSpec {
	n := rapid.IntRange(1, 3).Draw(t, "jobs")
	spec := BundleSpec{ID: rapid.SampledFrom(propBundles).Draw(t, "bundle"), Pool: "p"}
	for i := range n {
		req := ledger.Request{
			Capacity: rapid.Int64Range(0, 3000).Draw(t, "jcap"),
			Cores:    rapid.IntRange(0, 3).Draw(t, "jcores"),
		}
		if rapid.IntRange(0, 2).Draw(t, "jmem") == 0 {
			req.MemoryMiB = rapid.Int64Range(1, 6).Draw(t, "jmemN") * 512
		}
		if rapid.IntRange(0, 3).Draw(t, "gpu") == 0 {
			req.GPUCapacity = rapid.Int64Range(100, 1000).Draw(t, "gcap")
		}
		switch rapid.IntRange(0, 5).Draw(t, "capability") {
		case 0:
			req.Capabilities = []ledger.CapabilityRequest{{Name: "nic", Count: 1}}
		case 1:
			req.Capabilities = []ledger.CapabilityRequest{{Name: "cache", Count: 1}} // a service provides it
		}
		spec.Jobs = append(spec.Jobs, Job{Name: fmt.Sprintf("j%d", i), Requirements: req})
	}
	if rapid.Bool().Draw(t, "resilient") {
		spec.Resilience = &Resilience{SameNode: Forbid}
	}
	if rapid.IntRange(0, 4).Draw(t, "scheduled") == 0 {
		spec.StartAt = rapid.Int64Range(0, 40).Draw(t, "startAt")
	}
	return spec
}

// genPlan builds a plan from grants the ledger fits against the current
// state, sometimes mixed with releases, promotions and over-sized grants.
func genPlan(t *rapid.T, st *State, now int64) *Plan {
	plan := &Plan{Now: now}
	for range rapid.IntRange(1, 3).Draw(t, "parts") {
		b := st.Bundle(rapid.SampledFrom(propBundles).Draw(t, "bundle"))
		if b == nil {
			continue
		}
		u := BundleUpdate{BundleID: b.ID(), Promote: rapid.IntRange(0, 5).Draw(t, "promote") == 0}
		for _, r := range b.Replicas {
			node := st.Node(rapid.SampledFrom(propNodes).Draw(t, "node"))
			for _, j := range r.Jobs {
				if j.Placed() {
					if rapid.IntRange(0, 3).Draw(t, "release") == 0 {
						u.Release = append(u.Release, SlotJob{Slot: r.Slot, Job: j.Name})
					}
					continue
				}
				if node == nil {
					continue
				}
				g, err := ledger.Fit(node.Inventory(), node.Usage, b.Spec.Job(j.Name).Requirements)
				if err != nil || rapid.IntRange(0, 5).Draw(t, "oversize") == 0 {
					g = ledger.Grant{Capacity: rapid.Int64Range(0, 9000).Draw(t, "gcap"), MemoryMiB: rapid.Int64Range(0, 10).Draw(t, "gmem") * 1024}
				}
				u.Place = append(u.Place, Place{Slot: r.Slot, Job: j.Name, Node: node.ID, Grant: g})
			}
		}
		plan.Parts = append(plan.Parts, PlanPart{Updates: []BundleUpdate{u}})
	}
	return plan
}

var propServices = []string{"s1", "s2"}

// genService draws a node service: eager or lazy, providing a cache,
// charged some capacity, cores and memory.
func genService(t *rapid.T) NodeService {
	svc := NodeService{ID: rapid.SampledFrom(propServices).Draw(t, "service"), Pools: []string{"p"},
		Provides: []ledger.Capability{{Name: "cache", Count: rapid.Int64Range(1, 3).Draw(t, "provides")}},
		Requirements: ServiceRequirements{Capacity: rapid.Int64Range(0, 2000).Draw(t, "scap"), Cores: rapid.IntRange(0, 2).Draw(t, "scores"),
			MemoryMiB: rapid.Int64Range(0, 2).Draw(t, "smem") * 1024}}
	if rapid.Bool().Draw(t, "lazy") {
		svc.Lifecycle = LifecycleLazy
	}
	// a new launch is relaunched in place by an upsert with Update
	svc.Launch = Launch{Kind: LaunchLegacy, Job: &LegacyJob{Driver: DriverNone,
		Command: []string{rapid.SampledFrom([]string{"v1", "v2"}).Draw(t, "scommand")}}}
	return svc
}

func genOffers(t *rapid.T) *ServiceOfferRequest {
	req := &ServiceOfferRequest{}
	for range rapid.IntRange(1, 3).Draw(t, "offers") {
		req.Offers = append(req.Offers, ServiceOffer{ServiceID: rapid.SampledFrom(propServices).Draw(t, "service"),
			Node: rapid.SampledFrom(propNodes).Draw(t, "node"), Withdraw: rapid.Bool().Draw(t, "withdraw")})
	}
	return req
}

// genServicePlan starts or stops service instances, with grants the ledger
// fits to the service's request, sometimes wrong ones.
func genServicePlan(t *rapid.T, st *State, now int64) *Plan {
	plan := &Plan{Now: now}
	svc := st.Service(rapid.SampledFrom(propServices).Draw(t, "service"))
	node := st.Node(rapid.SampledFrom(propNodes).Draw(t, "node"))
	if svc == nil || node == nil {
		return plan
	}
	sp := ServicePlacement{ServiceID: svc.ID, Node: node.ID, Stop: rapid.IntRange(0, 3).Draw(t, "stop") == 0}
	if !sp.Stop {
		g, err := ledger.Fit(node.Inventory(), node.Usage, svc.Request())
		if err != nil || rapid.IntRange(0, 5).Draw(t, "wrong") == 0 {
			g = ledger.Grant{Capacity: rapid.Int64Range(0, 9000).Draw(t, "gcap")}
		}
		sp.Grant = g
	}
	plan.Parts = append(plan.Parts, PlanPart{Services: []ServicePlacement{sp}})
	return plan
}

func genReport(t *rapid.T, st *State, now int64) (MessageType, any) {
	node := rapid.SampledFrom(propNodes).Draw(t, "node")
	list := st.NodeAssignments(node)
	id := "none"
	if len(list) > 0 {
		id = list[rapid.IntRange(0, len(list)-1).Draw(t, "asg")].ID
	}
	status := rapid.SampledFrom([]string{JobRunning, JobStopped, JobFailed}).Draw(t, "report")
	return AssignmentStatusType, &AssignmentStatusRequest{NodeID: node, AssignmentID: id, Status: status, Now: now}
}

// genLog applies random commands to f, checking invariants after each, and
// returns the log for replay.
func genLog(t *rapid.T, f *FSM) []*raft.Log {
	steps := rapid.IntRange(1, 60).Draw(t, "steps")
	logs := make([]*raft.Log, 0, steps+1)
	logs = append(logs, &raft.Log{Index: 1, Type: raft.LogCommand, Data: mustEncode(t, UpsertPoolType, &UpsertPoolRequest{
		Pool: Pool{Name: "p", Caps: ledger.PoolCaps{MaxCapacity: rapid.Int64Range(0, 20000).Draw(t, "poolcap"),
			MaxMemoryMiB: rapid.Int64Range(0, 12).Draw(t, "poolmem") * 1024}},
	})})
	f.Apply(logs[0])
	// Start from registered, ready nodes so plans have somewhere to land.
	for _, id := range propNodes {
		n := genNode(t)
		n.ID = id
		for _, c := range []struct {
			typ  MessageType
			body any
		}{{RegisterNodeType, &RegisterNodeRequest{Node: n}}, {NodeStatusType, &NodeStatusRequest{NodeID: id, Status: NodeReady}}} {
			l := &raft.Log{Index: uint64(len(logs) + 1), Type: raft.LogCommand, Data: mustEncode(t, c.typ, c.body)}
			logs = append(logs, l)
			f.Apply(l)
		}
	}
	for i := range steps {
		typ, body := genCommand(t, f.State(), int64(i))
		l := &raft.Log{Index: uint64(len(logs) + 1), Type: raft.LogCommand, Data: mustEncode(t, typ, body)}
		logs = append(logs, l)
		f.Apply(l)
		checkInvariants(t, f)
	}
	return logs
}

// TestPropDeterministicReplay: the same log gives the same state whatever the
// batch split, and snapshot → restore reproduces it exactly, also over a
// non-empty FSM.
func TestPropDeterministicReplay(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a := New(Config{})
		logs := genLog(t, a)
		want := stateHash(t, a)

		b := New(Config{})
		for rest := logs; len(rest) > 0; {
			n := rapid.IntRange(1, len(rest)).Draw(t, "batch")
			b.ApplyBatch(rest[:n])
			rest = rest[n:]
		}
		if got := stateHash(t, b); got != want {
			t.Fatalf("batched replay diverged")
		}

		var buf bytes.Buffer
		snap, err := a.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteSnapshot(&buf, snap.(*fsmSnapshot).db, snap.(*fsmSnapshot).hdr.Index); err != nil {
			t.Fatal(err)
		}
		other := New(Config{})
		genLog(t, other) // unrelated prior state that must vanish
		if err := other.Restore(io.NopCloser(bytes.NewReader(buf.Bytes()))); err != nil {
			t.Fatal(err)
		}
		if got := stateHash(t, other); got != want {
			t.Fatalf("restore over a non-empty FSM left a trace of the old state")
		}
		checkInvariants(t, other)
	})
}
