package scheduler

import (
	"slices"
	"testing"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
)

// TestChainOrderIsTheDesignOrder: the stages run in the order of DESIGN
// §3.1, and a group that needs nothing of a stage skips it.
func TestChainOrderIsTheDesignOrder(t *testing.T) {
	c := threeNodes(t)
	snap := NewEngine(Options{}).Snapshot(c.state())
	all := fsm.Job{Name: "a", NodeRules: &fsm.NodeRules{Constraints: []string{`node.id != "x"`}}, Runtime: &fsm.RuntimeRequirement{OneOf: []string{"exec"}}, Requirements: ledger.Request{
		Capacity: 1000, Cores: 1, GPUCapacity: 100,
		Capabilities: []ledger.CapabilityRequest{{Name: "nic", Count: 1}},
	}}
	spec := &fsm.BundleSpec{ID: "b", Pool: "p", Jobs: []fsm.Job{all, {Name: "b", SeparateFrom: []string{"a"}}}}
	task := newTask(snap, Gang{Spec: spec, Forbid: Forbid{AZs: []string{"a"}}})
	want := []string{StagePool, StagePlaceable, StageTaints, StageRuntime, StageConstraints, "capability:*", StageGPU,
		StageCores, StageCapacity, StagePoolCaps, StageSameAz, StageSeparateFrom, StageAntiAffinity}
	if got := names(buildChain(task, task.groups[0], true)); !slices.Equal(got, want) {
		t.Fatalf("chain %v, want %v", got, want)
	}
	bare := newTask(snap, Gang{Spec: &fsm.BundleSpec{ID: "c", Pool: "p", Jobs: []fsm.Job{{Name: "a"}}}})
	if got := names(buildChain(bare, bare.groups[0], false)); !slices.Equal(got, []string{StagePool, StagePlaceable, StageTaints}) {
		t.Fatalf("bare chain %v", got)
	}
}

func names(chain []filter) []string {
	var out []string
	for _, f := range chain {
		out = append(out, f.Name())
	}
	return out
}
