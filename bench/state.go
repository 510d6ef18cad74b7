package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"time"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/ledger"
	"github.com/amserver/amserver/scheduler"
)

// The "state" suite: what one server's replicated state costs at 100,000
// placed bundles (quick: 10,000). The state is built by applying Raft log
// entries to an FSM exactly as every replica does (creates, then plans of
// 256 bundles), so memory is one server's; then a Raft snapshot of it is
// saved to disk and restored into a fresh FSM; then the HTTP API serves it
// and its bundle list is walked page by page (state_lists.go).

func init() { Suites["state"] = runState }

const (
	stateNodes    = 5000
	statePool     = "main"
	statePlanSize = 256
	stateRSSLimit = 500 << 20 // bytes per server (issue 19)
)

// measureState is the suite itself; runState runs it in a process of its
// own (state_child.go) so that memory is this state's alone.
func measureState(ctx context.Context, o Options) ([]Result, error) {
	bundles := 100_000
	if o.Quick {
		bundles = 10_000
	}
	base := settledMemory()
	resetPeakRSS()
	d, load, err := loadState(ctx, bundles)
	if err != nil {
		return nil, fmt.Errorf("state: load: %w", err)
	}
	peak := peakRSS()
	progressf(o, "state: %d bundles loaded", bundles)
	// The lists are served by the process as it is after loading, as a
	// server that has applied its log would serve them.
	lists, listErr := measureLists(ctx, d.fsm, bundles)
	loaded := settledMemory()
	if err := writeStateHeapProfile(os.Getenv("AMBENCH_STATE_HEAPPROFILE")); err != nil {
		return nil, err
	}
	out := append(load.results(bundles), memoryResults(bundles, base, loaded, peak)...)
	out = append(out, lists...)
	if listErr != nil {
		return out, fmt.Errorf("state: lists: %w", listErr)
	}
	snap, err := measureSnapshot(d.fsm, filepath.Join(o.Dir, "state"), bundles)
	out = append(out, snap...)
	runtime.KeepAlive(d)
	if err != nil {
		return out, fmt.Errorf("state: %w", err)
	}
	return out, nil
}

// loadTimes is how long one replica spent applying the loading commands,
// in wall time and in process CPU (garbage collection included).
type loadTimes struct {
	creates, plans       time.Duration
	createsCPU, plansCPU time.Duration
}

// Issue 19's goals for one replica's apply, in CPU time with garbage
// collection included: CPU time, unlike wall time, does not move with
// what else a shared machine runs.
const (
	stateCreateCPUGoal = 50 // µs per bundle create
	stateJobCPUGoal    = 25 // µs per placed job
)

func (l loadTimes) results(bundles int) []Result {
	us := func(d time.Duration, n int) float64 { return float64(d.Microseconds()) / float64(n) }
	create, job := us(l.createsCPU, bundles), us(l.plansCPU, 2*bundles)
	return []Result{
		{Suite: "state", Name: "FSM apply: bundle creates (one replica)", Value: float64(bundles) / l.creates.Seconds(), Unit: "bundles/s",
			Note: "one Raft entry each, as the API submits them, encoded beforehand; wall time, so it moves with the machine's load"},
		{Suite: "state", Name: "FSM apply CPU per bundle create", Value: create, Unit: "µs",
			Target: fmt.Sprintf("<= %d µs", stateCreateCPUGoal), Met: Met(create <= stateCreateCPUGoal),
			Note: "process CPU time (user+system, GC included) over the creates, divided by their number"},
		{Suite: "state", Name: "FSM apply: plans (one replica)", Value: float64(2*bundles) / l.plans.Seconds(), Unit: "jobs/s",
			Note: fmt.Sprintf("plans of %d 2-job bundles up to %d bundles; wall time", statePlanSize, bundles)},
		{Suite: "state", Name: "FSM apply CPU per placed job", Value: job, Unit: "µs",
			Target: fmt.Sprintf("<= %d µs", stateJobCPUGoal), Met: Met(job <= stateJobCPUGoal),
			Note: "process CPU time (GC included) over the plans, divided by the jobs they placed"},
	}
}

// loadState builds an FSM holding bundles placed 2-job bundles on 5,000
// nodes, through the same commands a leader commits, timing the creates and
// the plans apart.
func loadState(ctx context.Context, bundles int) (*fsmDriver, loadTimes, error) {
	var lt loadTimes
	d := newFSMDriver(scheduler.NewEngine(scheduler.Options{}))
	if _, err := d.apply(fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: fsm.Pool{Name: statePool}}); err != nil {
		return nil, lt, err
	}
	for i := range stateNodes {
		n := clusterNode(i)
		n.Pool = statePool
		if err := d.readyNode(n); err != nil {
			return nil, lt, err
		}
	}
	for first := 0; first < bundles; first += statePlanSize {
		if err := ctx.Err(); err != nil {
			return nil, lt, fmt.Errorf("loading: %w", err)
		}
		// The commands are encoded before the clocks start: encoding is
		// the leader's work, once, and what is timed is a replica's apply.
		creates, plan, err := encodeStateBatch(first, min(first+statePlanSize, bundles))
		if err != nil {
			return nil, lt, err
		}
		start, cpu := time.Now(), stateProcessCPU()
		for _, data := range creates {
			if _, err := d.applyEncoded(fsm.CreateBundleType, data); err != nil {
				return nil, lt, err
			}
		}
		lt.creates += time.Since(start)
		lt.createsCPU += stateProcessCPU() - cpu
		start, cpu = time.Now(), stateProcessCPU()
		if err := applyPlanAll(d, plan); err != nil {
			return nil, lt, err
		}
		lt.plans += time.Since(start)
		lt.plansCPU += stateProcessCPU() - cpu
	}
	return d, lt, nil
}

// encodeStateBatch encodes the creates of bundles [from, to) and the plan
// that places them.
func encodeStateBatch(from, to int) (creates [][]byte, plan []byte, err error) {
	p := &fsm.Plan{}
	for i := from; i < to; i++ {
		spec := stateSpec(i)
		data, err := fsm.Encode(fsm.CreateBundleType, &fsm.CreateBundleRequest{Spec: spec})
		if err != nil {
			return nil, nil, fmt.Errorf("encode create: %w", err)
		}
		creates = append(creates, data)
		p.Parts = append(p.Parts, statePart(spec.ID, i))
	}
	plan, err = fsm.Encode(fsm.ApplyPlanType, p)
	if err != nil {
		return nil, nil, fmt.Errorf("encode plan: %w", err)
	}
	return creates, plan, nil
}

// stateSpec is a typical channel: an encoder and a muxer with a launch
// command and a few tags.
func stateSpec(i int) fsm.BundleSpec {
	id := fmt.Sprintf("channel-%06d", i)
	launch := func(bin string) fsm.Launch {
		return fsm.Launch{Driver: "exec", Command: []string{"/usr/bin/" + bin, "--channel", id}}
	}
	return fsm.BundleSpec{
		ID: id, Pool: statePool,
		Jobs: []fsm.Job{
			{Name: "enc", Requirements: ledger.Request{Capacity: 500}, Launch: launch("encoder")},
			{Name: "mux", Requirements: ledger.Request{Capacity: 250}, CoLocateWith: []string{"enc"}, Launch: launch("muxer")},
		},
		Tags: map[string]string{"team": "video", "channel": id},
	}
}

// statePart places both jobs of bundle i on one node, round robin.
func statePart(id string, i int) fsm.PlanPart {
	node := clusterNode(i % stateNodes).ID
	return fsm.PlanPart{Updates: []fsm.BundleUpdate{{BundleID: id, Place: []fsm.Place{
		{Slot: 0, Job: "enc", Node: node, Grant: ledger.Grant{Capacity: 500}},
		{Slot: 0, Job: "mux", Node: node, Grant: ledger.Grant{Capacity: 250}},
	}}}}
}

func applyPlanAll(d *fsmDriver, plan []byte) error {
	res, err := d.applyEncoded(fsm.ApplyPlanType, plan)
	if err != nil {
		return err
	}
	if pr, ok := res.Value.(*fsm.PlanResult); !ok || len(pr.Rejected) > 0 {
		return fmt.Errorf("plan parts rejected: %+v", res.Value)
	}
	return nil
}

// memSample is the heap in use and the process's resident set.
type memSample struct {
	heap uint64
	rss  uint64
}

// settledMemory collects garbage and returns freed pages to the OS before
// sampling, so that RSS reflects what is live.
func settledMemory() memSample {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memSample{heap: ms.HeapAlloc, rss: processRSS(ms)} // HeapAlloc right after a GC: the live heap
}

func memoryResults(bundles int, base, loaded memSample, peak uint64) []Result {
	mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
	heap := loaded.heap - min(base.heap, loaded.heap)
	return []Result{
		{Suite: "state", Name: fmt.Sprintf("RSS per server, %d bundles", bundles), Value: mib(loaded.rss), Unit: "MiB",
			Target: "<= 500 MiB", Met: Met(loaded.rss <= stateRSSLimit),
			Note: fmt.Sprintf("a process of its own holding one replica's state, after a GC (%.0f MiB before loading)", mib(base.rss))},
		{Suite: "state", Name: fmt.Sprintf("peak RSS while loading, %d bundles", bundles), Value: mib(peak), Unit: "MiB",
			Note: "high-water mark with garbage not yet collected (GOGC=100); a server's RSS moves between the two"},
		{Suite: "state", Name: fmt.Sprintf("state heap, %d bundles", bundles), Value: mib(heap), Unit: "MiB",
			Note: fmt.Sprintf("%d nodes, 2 placed jobs per bundle, event log full", stateNodes)},
		{Suite: "state", Name: "state heap per bundle", Value: float64(heap) / float64(bundles), Unit: "bytes"},
	}
}

// measureSnapshot saves a Raft snapshot of f to a file (fsynced, as raft's
// file store does) and restores it into a fresh FSM, checking that the
// restored state's digest equals the original's.
func measureSnapshot(f *fsm.FSM, dir string, bundles int) ([]Result, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("snapshot dir: %w", err)
	}
	path := filepath.Join(dir, "state.snap")
	defer os.Remove(path)
	cpu0 := stateProcessCPU()
	save, size, err := timeSave(f, path)
	if err != nil {
		return nil, err
	}
	cpu1 := stateProcessCPU()
	fresh := fsm.New(fsm.Config{})
	restore, err := timeRestore(fresh, path)
	if err != nil {
		return nil, err
	}
	cpu2 := stateProcessCPU()
	if err := sameDigest(f, fresh); err != nil {
		return nil, err
	}
	return snapshotResults(bundles, snapTimes{save: save, restore: restore, saveCPU: cpu1 - cpu0, restoreCPU: cpu2 - cpu1}, size), nil
}

// snapTimes are a save's and a restore's wall and process CPU times.
type snapTimes struct {
	save, restore       time.Duration
	saveCPU, restoreCPU time.Duration
}

func timeSave(f *fsm.FSM, path string) (time.Duration, int64, error) {
	start := time.Now()
	snap, err := f.Snapshot()
	if err != nil {
		return 0, 0, fmt.Errorf("snapshot: %w", err)
	}
	defer snap.Release()
	file, err := os.Create(path)
	if err != nil {
		return 0, 0, fmt.Errorf("snapshot file: %w", err)
	}
	defer file.Close()
	bw := bufio.NewWriterSize(file, 1<<20)
	if err := fsm.PersistTo(snap, bw); err != nil {
		return 0, 0, fmt.Errorf("persist: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return 0, 0, fmt.Errorf("persist: %w", err)
	}
	if err := file.Sync(); err != nil {
		return 0, 0, fmt.Errorf("persist: %w", err)
	}
	elapsed := time.Since(start)
	info, err := file.Stat()
	if err != nil {
		return 0, 0, fmt.Errorf("snapshot size: %w", err)
	}
	return elapsed, info.Size(), nil
}

func timeRestore(f *fsm.FSM, path string) (time.Duration, error) {
	file, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("open snapshot: %w", err)
	}
	start := time.Now()
	if err := f.Restore(file); err != nil { // Restore closes the file
		return 0, fmt.Errorf("restore: %w", err)
	}
	return time.Since(start), nil
}

func sameDigest(a, b *fsm.FSM) error {
	da, err := a.State().Digest()
	if err != nil {
		return fmt.Errorf("digest: %w", err)
	}
	db, err := b.State().Digest()
	if err != nil {
		return fmt.Errorf("digest: %w", err)
	}
	if da != db {
		return fmt.Errorf("restored state differs from the saved one (digest %s vs %s)", db, da)
	}
	return nil
}

func snapshotResults(bundles int, t snapTimes, size int64) []Result {
	// The target (issue 19) is 3 s per 100,000 bundles; a quick run scales
	// it down.
	limit := 3 * time.Second * time.Duration(bundles) / 100_000
	total := t.save + t.restore
	return []Result{
		{Suite: "state", Name: fmt.Sprintf("snapshot save + restore, %d bundles", bundles), Value: total.Seconds(), Unit: "s",
			Target: fmt.Sprintf("<= %v", limit), Met: Met(total <= limit),
			Note: fmt.Sprintf("wall time: save %.2fs (to disk, fsynced), restore %.2fs (into a fresh FSM); CPU %.2fs + %.2fs (both use up to 2 cores)",
				t.save.Seconds(), t.restore.Seconds(), t.saveCPU.Seconds(), t.restoreCPU.Seconds())},
		{Suite: "state", Name: "snapshot save", Value: t.save.Seconds(), Unit: "s", Note: fmt.Sprintf("%.2fs CPU", t.saveCPU.Seconds())},
		{Suite: "state", Name: "snapshot restore", Value: t.restore.Seconds(), Unit: "s", Note: fmt.Sprintf("%.2fs CPU", t.restoreCPU.Seconds())},
		{Suite: "state", Name: fmt.Sprintf("snapshot size, %d bundles", bundles), Value: float64(size) / (1 << 20), Unit: "MiB"},
	}
}

// writeStateHeapProfile writes the loaded state's heap profile to path
// (AMBENCH_STATE_HEAPPROFILE; nothing when empty): what the bytes per
// bundle are made of.
func writeStateHeapProfile(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("state: heap profile: %w", err)
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("state: heap profile: %w", err)
	}
	return f.Close()
}
