package scheduler

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/amserver/amserver/fsm"
)

func checkExpectation(t *testing.T, st *fsm.State, b *fsm.Bundle, r Result, e expectation) {
	t.Helper()
	prim, back := replicaNodes(b, fsm.RolePrimary), replicaNodes(b, fsm.RoleBackup)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("bundle %s (state %s, primary %v, backup %v, degradations %v, explain %s): "+format,
			append([]any{b.ID(), b.State, prim, back, b.Degradations, explainString(b.Explain)}, args...)...)
	}
	if e.Placed != nil && (len(prim) == len(b.Spec.Jobs)) != *e.Placed {
		fail("placed: want %v", *e.Placed)
	}
	if e.BackupPlaced != nil && (len(back) == len(b.Spec.Jobs)) != *e.BackupPlaced {
		fail("backup placed: want %v", *e.BackupPlaced)
	}
	if e.Degradations != nil && !slices.Equal(codes(b.Degradations), sorted(e.Degradations)) {
		fail("degradations: want %v", e.Degradations)
	}
	if e.State != "" && b.State != e.State {
		fail("state: want %s", e.State)
	}
	checkNodes(fail, "primary", prim, e.Nodes)
	checkNodes(fail, "backup", back, e.BackupNodes)
	checkDomains(fail, st, "primary az", prim, e.AZs, "az")
	checkDomains(fail, st, "backup az", back, e.BackupAZs, "az")
	checkDomains(fail, st, "primary cloud", prim, e.Clouds, "cloud")
	checkDomains(fail, st, "backup cloud", back, e.BackupClouds, "cloud")
	checkLayout(fail, st, prim, e)
	checkApart(fail, st, prim, back, e.BackupApart)
	checkGrants(fail, b, e)
	checkService(fail, st, b, e.Service)
	if e.Moved != nil && (r.Update != nil && len(r.Update.Release) > 0) != *e.Moved {
		fail("moved: want %v (update %+v)", *e.Moved, r.Update)
	}
	if e.Explain != nil {
		ex := b.Explain
		if ex == nil {
			ex = r.BackupExplain
		}
		checkExplain(fail, ex, e.Explain)
	}
}

// checkLayout checks the primary's co-location, separation and AZ spread.
func checkLayout(fail func(string, ...any), st *fsm.State, prim map[string]string, e expectation) {
	for _, set := range e.SameNode {
		for _, j := range set[1:] {
			if prim[j] != prim[set[0]] || prim[j] == "" {
				fail("jobs %v must share a node", set)
			}
		}
	}
	for _, set := range e.DistinctNodes {
		seen := map[string]bool{}
		for _, j := range set {
			if seen[prim[j]] || prim[j] == "" {
				fail("jobs %v must be on distinct nodes", set)
			}
			seen[prim[j]] = true
		}
	}
	if e.SingleAZ != nil {
		azs := map[string]bool{}
		for _, id := range prim {
			azs[st.Node(id).AZ()] = true
		}
		if (len(azs) == 1) != *e.SingleAZ {
			fail("single az: want %v", *e.SingleAZ)
		}
	}
}

func checkApart(fail func(string, ...any), st *fsm.State, prim, back map[string]string, domains []string) {
	for _, d := range domains {
		of := func(id string) string {
			if d == "node" {
				return id
			}
			return st.Node(id).Labels[d]
		}
		used := map[string]bool{}
		for _, id := range prim {
			used[of(id)] = true
		}
		for job, id := range back {
			if used[of(id)] {
				fail("backup job %s shares %s %q with the primary", job, d, of(id))
			}
		}
	}
}

func checkGrants(fail func(string, ...any), b *fsm.Bundle, e expectation) {
	for _, r := range b.Replicas {
		if r.Role != fsm.RolePrimary {
			continue
		}
		for _, j := range r.Jobs {
			if want, ok := e.GrantCapacity[j.Name]; ok && j.Grant.Capacity != want {
				fail("job %s granted capacity %d, want %d", j.Name, j.Grant.Capacity, want)
			}
			if want, ok := e.GrantCores[j.Name]; ok && len(j.Grant.Cores) != want {
				fail("job %s granted %d cores, want %d", j.Name, len(j.Grant.Cores), want)
			}
		}
	}
}

func checkNodes(fail func(string, ...any), what string, got map[string]string, want map[string][]string) {
	for job, allowed := range want {
		if !slices.Contains(allowed, got[job]) {
			fail("%s job %s on %q, want one of %v", what, job, got[job], allowed)
		}
	}
}

func checkDomains(fail func(string, ...any), st *fsm.State, what string, got map[string]string, allowed []string, label string) {
	if allowed == nil {
		return
	}
	for job, id := range got {
		if v := st.Node(id).Labels[label]; !slices.Contains(allowed, v) {
			fail("%s of job %s is %q, want one of %v", what, job, v, allowed)
		}
	}
}

func checkExplain(fail func(string, ...any), ex *fsm.Explain, want *explainExpect) {
	if ex == nil {
		fail("no explanation")
		return
	}
	if want.NodesEvaluated != nil && ex.NodesEvaluated != *want.NodesEvaluated {
		fail("nodesEvaluated: want %d", *want.NodesEvaluated)
	}
	if want.Filtered != nil && !reflect.DeepEqual(ex.Filtered, want.Filtered) {
		fail("filtered: want %v", want.Filtered)
	}
	if m := want.NearestMiss; m != nil {
		got := ex.NearestMiss
		switch {
		case got == nil:
			fail("no nearest miss")
		case m.NodeID != "" && got.NodeID != m.NodeID,
			m.Stage != "" && got.Stage != m.Stage,
			!strings.Contains(got.Detail, m.DetailContains):
			fail("nearest miss: want %+v", *m)
		}
	}
}

func explainString(ex *fsm.Explain) string {
	if ex == nil {
		return "none"
	}
	return Summary(ex)
}

func sorted(l []string) []string {
	out := slices.Clone(l)
	slices.Sort(out)
	if out == nil {
		out = []string{}
	}
	return out
}
