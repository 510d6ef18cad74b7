package bench

import (
	"fmt"
	"math/rand/v2"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
	"github.com/amserver/amserver/scheduler"
)

// The placement suite's synthetic inventory, built with exported APIs only
// and shaped like the scheduler's own benchmarks (scheduler/bench_*_test.go)
// so the two tables can be compared: 3 AZs, 2 clouds, GPUs on a tenth of the
// nodes, capabilities on a fifth, 32..64 capacity units and 16..64 cores,
// pre-filled to about a third by the engine itself through a real FSM.

const schedPool = "main"

// fsmDriver applies commands to an FSM with consecutive Raft indexes, as a
// replica would.
type fsmDriver struct {
	fsm   *fsm.FSM
	index uint64
}

func newFSMDriver(eng *scheduler.Engine) *fsmDriver {
	return &fsmDriver{fsm: fsm.New(fsm.Config{Exprs: eng.ExprChecker(), Eval: eng.ExprChecker()})}
}

// apply applies one command and returns its result; a command's own
// failure is an error here, since the suites only send valid ones.
func (d *fsmDriver) apply(typ fsm.MessageType, body any) (*fsm.Result, error) {
	data, err := fsm.Encode(typ, body)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", typ, err)
	}
	return d.applyEncoded(typ, data)
}

// applyEncoded applies one command already encoded (fsm.Encode).
func (d *fsmDriver) applyEncoded(typ fsm.MessageType, data []byte) (*fsm.Result, error) {
	d.index++
	res, ok := d.fsm.Apply(&raft.Log{Index: d.index, Term: 1, Type: raft.LogCommand, Data: data}).(*fsm.Result)
	if !ok {
		return nil, fmt.Errorf("apply %s: unexpected response", typ)
	}
	if res.Err != nil {
		return res, fmt.Errorf("apply %s: %w", typ, res.Err)
	}
	return res, nil
}

// readyNode registers a node and marks it ready, as the leader would after
// gossip saw it.
func (d *fsmDriver) readyNode(n fsm.Node) error {
	if _, err := d.apply(fsm.RegisterNodeType, &fsm.RegisterNodeRequest{Node: n}); err != nil {
		return err
	}
	_, err := d.apply(fsm.NodeStatusType, &fsm.NodeStatusRequest{NodeID: n.ID, Status: fsm.NodeReady, AZ: n.AZ(), Cloud: n.Cloud()})
	return err
}

// schedWorld is an inventory of n nodes at a fill level.
type schedWorld struct {
	d     *fsmDriver
	eng   *scheduler.Engine
	nodes int
}

func newSchedWorld(nodes int, fill float64) (*schedWorld, error) {
	eng := scheduler.NewEngine(scheduler.Options{})
	w := &schedWorld{d: newFSMDriver(eng), eng: eng, nodes: nodes}
	if _, err := w.d.apply(fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: fsm.Pool{Name: schedPool}}); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(uint64(nodes), 42))
	var alloc int64
	for i := range nodes {
		n := schedNode(rng, i)
		alloc += n.TotalCapacity
		if err := w.d.readyNode(n); err != nil {
			return nil, err
		}
	}
	if err := w.prefill(rng, alloc, fill); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *schedWorld) state() *fsm.State { return w.d.fsm.State() }

// prefill places random bundles until about fill of the capacity is used,
// committing them through the FSM in batches of 2,000.
func (w *schedWorld) prefill(rng *rand.Rand, alloc int64, fill float64) error {
	for seq := 0; ; {
		st := w.state()
		if float64(st.Pool(schedPool).Usage.Capacity) >= fill*float64(alloc) {
			return nil
		}
		batch := w.eng.Snapshot(st).NewBatch(uint64(seq))
		for range 2000 {
			seq++
			b := schedBundle(rng, fmt.Sprintf("fill-%d", seq), 1+rng.IntN(4), rng.IntN(2) == 0)
			if _, err := w.d.apply(fsm.CreateBundleType, &fsm.CreateBundleRequest{Spec: b.Spec}); err != nil {
				return err
			}
			batch.Place(b)
		}
		if _, err := w.d.apply(fsm.ApplyPlanType, batch.Plan(0)); err != nil {
			return err
		}
	}
}

func schedNode(rng *rand.Rand, i int) fsm.Node {
	n := fsm.Node{
		ID: fmt.Sprintf("node-%05d", i), Pool: schedPool, UtilizationCap: 1000,
		TotalCapacity: int64(32+rng.IntN(33)) * 1000, TotalCores: 16 + rng.IntN(49),
		Labels: map[string]string{
			"az":    []string{"az1", "az2", "az3"}[i%3],
			"cloud": []string{"aws", "gcp"}[(i/3)%2],
			"rack":  fmt.Sprintf("r%d", rng.IntN(20)),
		},
	}
	if i%10 == 0 {
		n.GPUs = []ledger.GPU{{Index: 0, Model: "t4", Capacity: 1000}, {Index: 1, Model: "a100", Capacity: 1000}}
	}
	if i%5 == 1 {
		n.Capabilities = []ledger.Capability{
			{Name: "st2110-nic", Count: 4, Attributes: map[string]string{"speed": "25g"}},
			{Name: "licence", Count: 8},
		}
	}
	return n
}

// schedSpec is a random bundle spec: jobs of 0.5..4 capacity units and 0..2
// pinned cores, some co-located with or separated from the first, a few
// with a GPU share, a capability or a constraint; a quarter prefer one AZ.
func schedSpec(rng *rand.Rand, id string, jobs int, resilient bool) fsm.BundleSpec {
	spec := fsm.BundleSpec{ID: id, Pool: schedPool, Priority: fsm.PrioritySilver, Placement: fsm.Placement{SameAz: fsm.SameAzOff}}
	for j := range jobs {
		job := fsm.Job{Name: fmt.Sprintf("j%d", j), Requirements: ledger.Request{Capacity: int64(1+rng.IntN(8)) * 500, Cores: rng.IntN(3)}}
		switch rng.IntN(40) {
		case 0:
			job.Requirements.GPUCapacity = 200
		case 1:
			job.Requirements.Capabilities = []ledger.CapabilityRequest{{Name: "st2110-nic", Count: 1}}
		case 2:
			job.EditRules().Constraints = []string{`node.labels.rack != "r7"`}
		}
		if j > 0 {
			switch rng.IntN(3) {
			case 0:
				job.CoLocateWith = []string{"j0"}
			case 1:
				job.SeparateFrom = []string{"j0"}
			}
		}
		spec.Jobs = append(spec.Jobs, job)
	}
	if rng.IntN(4) == 0 {
		spec.Placement.SameAz = fsm.SameAzSoft
	}
	if resilient {
		spec.Resilience = &fsm.Resilience{SameNode: fsm.Forbid, SameAz: fsm.Forbid, SameCloud: fsm.Allow}
	}
	return spec
}

// schedBundle is schedSpec as a pending bundle, as the FSM would create it.
func schedBundle(rng *rand.Rand, id string, jobs int, resilient bool) *fsm.Bundle {
	spec := schedSpec(rng, id, jobs, resilient)
	fsm.Normalize(&spec)
	b := &fsm.Bundle{Spec: spec, State: fsm.StatePending, Epoch: 1}
	for slot := range spec.Replicas() {
		r := fsm.Replica{Slot: slot}
		for _, j := range spec.Jobs {
			r.Jobs = append(r.Jobs, fsm.JobPlacement{Name: j.Name})
		}
		b.Replicas = append(b.Replicas, r)
	}
	return b
}
