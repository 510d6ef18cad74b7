package fsm

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/ledger"
)

// benchCluster registers n ready nodes in pool "p" and returns the harness.
func benchCluster(b *testing.B, nodes int) *harness {
	h := newHarness(b)
	for i := range nodes {
		n := testNode(fmt.Sprintf("n%05d", i), "p", fmt.Sprintf("az%d", i%3), fmt.Sprintf("c%d", i%2), 64000, 64)
		h.readyNode(n)
	}
	return h
}

// BenchmarkApplyPlan measures the FSM's plan re-check and commit: plans of
// 100 single-job bundles on a 5,000-node state, reported as jobs/s.
func BenchmarkApplyPlan(b *testing.B) {
	const perPlan = 100
	h := benchCluster(b, 5000)
	total := b.N * perPlan
	for i := range total {
		h.ok(CreateBundleType, &CreateBundleRequest{Spec: testBundle(fmt.Sprintf("b%07d", i), "p", testJob("j", 10, 0))})
	}
	logs := make([]*raft.Log, b.N)
	for i := range logs {
		plan := &Plan{}
		for j := range perPlan {
			k := i*perPlan + j
			node := fmt.Sprintf("n%05d", k%5000)
			plan.Parts = append(plan.Parts, place(fmt.Sprintf("b%07d", k), 0, node, ledger.Grant{Capacity: 10}))
		}
		logs[i] = h.log(ApplyPlanType, plan)
	}
	b.ResetTimer()
	for _, l := range logs {
		res := h.fsm.Apply(l).(*Result)
		if pr := res.Value.(*PlanResult); len(pr.Rejected) > 0 {
			b.Fatalf("rejected: %+v", pr.Rejected[0])
		}
	}
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "jobs/s")
}

// snapshotFixture builds a state of n placed bundles over 1,000 nodes.
func snapshotFixture(b *testing.B, n int) *harness {
	h := benchCluster(b, 1000)
	for i := range n {
		id := fmt.Sprintf("b%07d", i)
		spec := testBundle(id, "p", testJob("enc", 10, 0), testJob("mux", 10, 0))
		spec.Tags = map[string]string{"team": "video", "channel": id}
		h.ok(CreateBundleType, &CreateBundleRequest{Spec: spec})
		node := fmt.Sprintf("n%05d", i%1000)
		part := PlanPart{Updates: []BundleUpdate{{BundleID: id, Place: []Place{
			{Slot: 0, Job: "enc", Node: node, Grant: ledger.Grant{Capacity: 10}},
			{Slot: 0, Job: "mux", Node: node, Grant: ledger.Grant{Capacity: 10}},
		}}}}
		h.ok(ApplyPlanType, &Plan{Parts: []PlanPart{part}})
	}
	return h
}

// BenchmarkSnapshot100k saves and restores 100,000 placed bundles; one
// iteration is one save plus one restore.
func BenchmarkSnapshot100k(b *testing.B) {
	h := snapshotFixture(b, 100_000)
	var buf bytes.Buffer
	b.ResetTimer()
	for range b.N {
		buf.Reset()
		snap, _ := h.fsm.Snapshot()
		if err := WriteSnapshot(&buf, snap.(*fsmSnapshot).db, 1); err != nil {
			b.Fatal(err)
		}
		if err := New(Config{}).Restore(io.NopCloser(bytes.NewReader(buf.Bytes()))); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len())/1e6, "snapshotMB")
}

// BenchmarkStateBytesPerBundle reports heap bytes held per placed bundle
// (bundle, two reservations, two assignments, events).
func BenchmarkStateBytesPerBundle(b *testing.B) {
	const n = 20_000
	for range b.N {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		h := snapshotFixture(b, n)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "bytes/bundle")
		runtime.KeepAlive(h)
	}
}

// BenchmarkSnapshot100kParts times a save and a restore of 100,000 placed
// bundles apart, on one fixture.
func BenchmarkSnapshot100kParts(b *testing.B) {
	h := snapshotFixture(b, 100_000)
	snap, _ := h.fsm.Snapshot()
	var buf bytes.Buffer
	b.Run("save", func(b *testing.B) {
		for b.Loop() {
			buf.Reset()
			if err := WriteSnapshot(&buf, snap.(*fsmSnapshot).db, 1); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("restore", func(b *testing.B) {
		for b.Loop() {
			if err := New(Config{}).Restore(io.NopCloser(bytes.NewReader(buf.Bytes()))); err != nil {
				b.Fatal(err)
			}
		}
	})
}
