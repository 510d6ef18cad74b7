package scheduler

import (
	"archive/tar"
	"bytes"
	"strings"
	"testing"

	"github.com/amserver/amserver/artifact"
	"github.com/amserver/amserver/fsm"
)

// pushTemplate stores a one-file template through the FSM, as the API does.
func (c *cluster) pushTemplate(name, file, content string) string {
	c.t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: file, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
		c.t.Fatalf("tar: %v", err)
	}
	_, _ = tw.Write([]byte(content))
	_ = tw.Close()
	info, err := artifact.Inspect(buf.Bytes())
	if err != nil {
		c.t.Fatalf("inspect: %v", err)
	}
	c.ok(fsm.PutTemplateType, &fsm.PutTemplateRequest{Name: name, Digest: info.Digest, Runtime: info.Runtime,
		Files: info.Files, Archive: buf.Bytes()})
	return info.Digest
}

// runtimeNodes: a node of each kind of offer, in pool p.
func runtimeNodes(t *testing.T) *cluster {
	c := newCluster(t)
	c.pool(fsm.Pool{Name: "p"})
	offer := map[string][]string{"w-old": nil, "w-compose": {"compose"}, "w-wasm": {"WasmTime"}, "w-docker": {"container", "exec"}}
	for id, rts := range offer {
		n := mkNode(id, "p", "a", "x", 8000, 4)
		n.Runtimes = rts
		c.node(n)
	}
	pve := mkNode("w-pve", "p", "a", "x", 8000, 4)
	pve.Kind = "proxmox"
	c.node(pve)
	c.pushTemplate("web", "compose.yaml", "services:\n  app:\n    image: x\n")
	c.pushTemplate("mod", "main.wasm", "\x00asm")
	return c
}

func launchOf(kind, ref, driver string) fsm.Launch {
	if kind == fsm.LaunchProductTemplate {
		return fsm.Launch{Kind: kind, Ref: ref}
	}
	return fsm.Launch{Kind: fsm.LaunchLegacy, Job: &fsm.LegacyJob{Driver: driver, Command: []string{"x"}, Image: "i"}}
}

func TestRuntimeStagePlaces(t *testing.T) {
	c := runtimeNodes(t)
	cases := []struct {
		name   string
		launch fsm.Launch
		oneOf  []string
		want   []string // nodes it may land on
	}{
		{"compose template", launchOf(fsm.LaunchProductTemplate, "web", ""), nil, []string{"w-compose"}},
		{"wasm template (alias on the node)", launchOf(fsm.LaunchProductTemplate, "mod", ""), nil, []string{"w-wasm"}},
		{"exec: nodes without runtimes run it", fsm.Launch{Driver: fsm.DriverExec, Command: []string{"x"}}, nil, []string{"w-old", "w-docker", "w-pve"}},
		{"docker (alias on the node)", launchOf(fsm.LaunchLegacy, "", fsm.DriverDocker), nil, []string{"w-docker"}},
		{"none runs anywhere", fsm.Launch{}, nil, []string{"w-old", "w-compose", "w-wasm", "w-docker", "w-pve"}},
		{"oneOf overrides the launch", fsm.Launch{}, []string{"Wasm", "compose"}, []string{"w-compose", "w-wasm"}},
		{"pve-vm on the proxmox node", fsm.Launch{}, []string{"pve-vm"}, []string{"w-pve"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := mkJob("a", 1000, 0)
			j.Launch = tc.launch
			if tc.oneOf != nil {
				j.Runtime = &fsm.RuntimeRequirement{OneOf: tc.oneOf}
			}
			for seed := range uint64(8) { // every node it may land on, and no other
				b, ex := NewEngine(Options{}).Snapshot(c.state()).DryRun(fsm.BundleSpec{ID: "b", Pool: "p", Jobs: []fsm.Job{j}}, seed)
				if ex != nil || b.State != fsm.StatePlaced {
					t.Fatalf("unplaced: %+v", ex)
				}
				if got := b.Replicas[0].Jobs[0].NodeID; !containsStr(tc.want, got) {
					t.Fatalf("placed on %s, want one of %v", got, tc.want)
				}
			}
		})
	}
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestRuntimeStageExplains: a job needing wasm in a pool without it is
// unplaceable, and the explanation (a dry run's and the placer's) counts
// every node of the pool against runtime, nearest miss included.
func TestRuntimeStageExplains(t *testing.T) {
	c := newCluster(t)
	c.pool(fsm.Pool{Name: "p"})
	for _, id := range []string{"n1", "n2", "n3"} {
		n := mkNode(id, "p", "a", "x", 8000, 4)
		n.Runtimes = []string{"exec", "docker"}
		c.node(n)
	}
	c.node(mkNode("other", "q", "a", "x", 8000, 4))
	c.pushTemplate("mod", "main.wasm", "\x00asm")
	j := mkJob("a", 1000, 0)
	j.Launch = launchOf(fsm.LaunchProductTemplate, "mod", "")
	spec := fsm.BundleSpec{ID: "b", Pool: "p", Jobs: []fsm.Job{j}}
	b, ex := NewEngine(Options{}).Snapshot(c.state()).DryRun(spec, 1)
	if b.State != fsm.StateUnplaceable || ex == nil {
		t.Fatalf("state %s explain %+v", b.State, ex)
	}
	if ex.NodesEvaluated != 4 || ex.Filtered[StageRuntime] != 3 || ex.Filtered[StagePool] != 1 {
		t.Fatalf("explain %+v", ex)
	}
	m := ex.NearestMiss
	if m == nil || m.Stage != StageRuntime || m.NodeID != "n1" || !strings.Contains(m.Detail, "wasm") || !strings.Contains(m.Detail, "docker") {
		t.Fatalf("nearest miss %+v", m)
	}
	// The placer records the same explanation on the bundle.
	c.bundle(spec)
	snap := NewEngine(Options{}).Snapshot(c.state())
	res := snap.NewBatch(1).Place(c.state().Bundle("b"))
	if res.PrimaryPlaced || res.Explain == nil || res.Explain.Filtered[StageRuntime] != 3 {
		t.Fatalf("placer result %+v", res)
	}
}

// TestRuntimeRefresh: a node that re-registers with other runtimes is seen
// by the next snapshot (the index is rebuilt, not refreshed).
func TestRuntimeRefresh(t *testing.T) {
	c := newCluster(t)
	c.pool(fsm.Pool{Name: "p"})
	c.node(mkNode("n1", "p", "a", "x", 8000, 4))
	e := NewEngine(Options{})
	j := mkJob("a", 1000, 0)
	j.Launch = launchOf(fsm.LaunchLegacy, "", fsm.DriverDocker)
	spec := fsm.BundleSpec{ID: "b", Pool: "p", Jobs: []fsm.Job{j}}
	if b, _ := e.Snapshot(c.state()).DryRun(spec, 1); b.State != fsm.StateUnplaceable {
		t.Fatal("docker placed on a node without it")
	}
	n := mkNode("n1", "p", "a", "x", 8000, 4)
	n.Runtimes = []string{"docker"}
	c.ok(fsm.RegisterNodeType, &fsm.RegisterNodeRequest{Node: n})
	if b, _ := e.Snapshot(c.state()).DryRun(spec, 1); b.State != fsm.StatePlaced {
		t.Fatal("the re-registered node's docker was not seen")
	}
}
