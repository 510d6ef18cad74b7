package fsm

import (
	"bytes"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/ledger"
)

// The apply benchmarks use the state suite's shape (bench/state.go): 5,000
// nodes, 2-job "channel" bundles with an exec launch and two tags, created
// one Raft entry each and placed by plans of 256 bundles. Commands are
// encoded before the timer starts, so what is measured is a replica's
// apply alone. Profile with
//
//	go test ./fsm -run '^$' -bench 'ApplyCreate|ApplyPlanState' -cpuprofile cpu.out -memprofile mem.out

const benchStateNodes = 5000

func benchStateCluster(b *testing.B) *harness {
	h := newHarness(b)
	h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p"}})
	for i := range benchStateNodes {
		h.readyNode(Node{
			ID: fmt.Sprintf("w%05d", i), Pool: "p", UtilizationCap: 1000,
			TotalCapacity: int64(32+i%33) * 1000, TotalCores: 16 + i%49,
			Labels: map[string]string{"az": fmt.Sprintf("az%d", i%3+1), "cloud": []string{"aws", "gcp"}[(i/3)%2]},
		})
	}
	return h
}

func benchChannel(i int) BundleSpec {
	id := fmt.Sprintf("channel-%07d", i)
	launch := func(bin string) Launch {
		return Launch{Driver: "exec", Command: []string{"/usr/bin/" + bin, "--channel", id}}
	}
	return BundleSpec{
		ID: id, Pool: "p",
		Jobs: []Job{
			{Name: "enc", Requirements: ledger.Request{Capacity: 500}, Launch: launch("encoder")},
			{Name: "mux", Requirements: ledger.Request{Capacity: 250}, CoLocateWith: []string{"enc"}, Launch: launch("muxer")},
		},
		Tags: map[string]string{"team": "video", "channel": id},
	}
}

func benchChannelPart(i int) PlanPart {
	node := benchNodeID(i % benchStateNodes)
	return PlanPart{Updates: []BundleUpdate{{BundleID: benchChannel(i).ID, Place: []Place{
		{Slot: 0, Job: "enc", Node: node, Grant: ledger.Grant{Capacity: 500}},
		{Slot: 0, Job: "mux", Node: node, Grant: ledger.Grant{Capacity: 250}},
	}}}}
}

// BenchmarkApplyCreate applies bundle creates, one entry each, to a state
// already holding 20,000 placed bundles.
func BenchmarkApplyCreate(b *testing.B) {
	h := benchStateCluster(b)
	const preload = 20_000
	benchPreload(b, h, preload)
	logs := make([]*raft.Log, b.N)
	for i := range logs {
		logs[i] = h.log(CreateBundleType, &CreateBundleRequest{Spec: benchChannel(preload + i)})
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchCPU()
	for _, l := range logs {
		if res := h.fsm.Apply(l).(*Result); res.Err != nil {
			b.Fatal(res.Err)
		}
	}
	reportCPU(b, cpu, b.N, "cpu-µs/create")
}

// benchCPU is the process's CPU time (user and system): over a loop it is
// what the loop cost, garbage collection included, however loaded the
// machine is, which wall time on a shared machine is not.
func benchCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, since time.Duration, n int, unit string) {
	b.ReportMetric(float64((benchCPU()-since).Microseconds())/float64(n), unit)
}

// BenchmarkApplyPlanState applies plans of 256 2-job bundles; reported per
// placed job.
func BenchmarkApplyPlanState(b *testing.B) {
	const perPlan = 256
	h := benchStateCluster(b)
	total := b.N * perPlan
	for i := range total {
		h.ok(CreateBundleType, &CreateBundleRequest{Spec: benchChannel(i)})
	}
	logs := make([]*raft.Log, b.N)
	for i := range logs {
		plan := &Plan{}
		for j := range perPlan {
			plan.Parts = append(plan.Parts, benchChannelPart(i*perPlan+j))
		}
		logs[i] = h.log(ApplyPlanType, plan)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchCPU()
	for _, l := range logs {
		res := h.fsm.Apply(l).(*Result)
		if pr := res.Value.(*PlanResult); len(pr.Rejected) > 0 {
			b.Fatalf("rejected: %+v", pr.Rejected[0])
		}
	}
	reportCPU(b, cpu, 2*total, "cpu-µs/job")
}

func benchPreload(b *testing.B, h *harness, n int) {
	b.Helper()
	for first := 0; first < n; first += 256 {
		plan := &Plan{}
		for i := first; i < min(first+256, n); i++ {
			h.ok(CreateBundleType, &CreateBundleRequest{Spec: benchChannel(i)})
			plan.Parts = append(plan.Parts, benchChannelPart(i))
		}
		if pr := h.ok(ApplyPlanType, plan).Value.(*PlanResult); len(pr.Rejected) > 0 {
			b.Fatalf("preload rejected: %+v", pr.Rejected[0])
		}
	}
}

func benchNodeID(i int) string { return fmt.Sprintf("w%05d", i) }

// BenchmarkSnapshotState saves and restores 20,000 bundles of the state
// suite's shape, apart (the suite's 100,000 take five times as long).
func BenchmarkSnapshotState(b *testing.B) {
	h := benchStateCluster(b)
	benchPreload(b, h, 20_000)
	snap, _ := h.fsm.Snapshot()
	var buf bytes.Buffer
	b.Run("save", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf.Reset()
			if err := PersistTo(snap, &buf); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("restore", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := New(Config{}).Restore(io.NopCloser(bytes.NewReader(buf.Bytes()))); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkApplyCreateBatched is BenchmarkApplyCreate with the creates
// handed over 64 at a time (raft.BatchingFSM), as a loaded leader does.
func BenchmarkApplyCreateBatched(b *testing.B) {
	h := benchStateCluster(b)
	const preload = 20_000
	benchPreload(b, h, preload)
	logs := make([]*raft.Log, b.N)
	for i := range logs {
		logs[i] = h.log(CreateBundleType, &CreateBundleRequest{Spec: benchChannel(preload + i)})
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchCPU()
	for first := 0; first < len(logs); first += 64 {
		for _, r := range h.fsm.ApplyBatch(logs[first:min(first+64, len(logs))]) {
			if res := r.(*Result); res.Err != nil {
				b.Fatal(res.Err)
			}
		}
	}
	reportCPU(b, cpu, b.N, "cpu-µs/create")
}

// BenchmarkStateGauges reads what the /metrics gauges read (bundles in
// every state) at 100,000 placed bundles: by count, as the collector does,
// and by listing them, as it did.
func BenchmarkStateGauges(b *testing.B) {
	h := benchStateCluster(b)
	benchPreload(b, h, 100_000)
	states := []string{StateScheduled, StatePending, StatePlaced, StateDegraded, StateUnplaceable, StateDeleting}
	st := h.fsm.State()
	if n := st.CountBundles(StatePlaced); n != 100_000 {
		b.Fatalf("%d placed bundles, want 100000", n)
	}
	b.Run("count", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, s := range states {
				_ = st.CountBundles(s)
			}
		}
	})
	b.Run("list", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, s := range states {
				_ = len(st.BundlesInState(s))
			}
		}
	})
}
