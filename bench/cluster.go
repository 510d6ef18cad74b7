package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
)

// The "cluster" suite: committed placements per second through a real
// 3-server cluster (TCP Raft on loopback, WAL log stores on disk with fsync,
// gossip on loopback) over 5,000 registered nodes. Bundles are submitted
// over the HTTP API to the leader; the clock runs from the first submit
// until the leader's state shows every job placed, so creates, placement
// passes, plan commits and every replica's apply are all inside it. A second
// run per shape (cluster_burst.go) creates as many bundles again, due at one
// startAt ahead, and clocks placement alone: creates are outside its window.

func init() { Suites["cluster"] = runCluster }

const (
	clusterNodes  = 5000
	clusterPool   = "bench"
	clusterConc   = 64
	clusterTarget = 10000 // jobs/s
	clusterJobs   = 20_000
)

// clusterShape is one kind of submitted bundle.
type clusterShape struct {
	name  string
	spec  func(i int) api.BundleSpec
	jobs  int   // placements per bundle, backups included
	milli int64 // pool capacity one placed bundle holds
}

var clusterShapes = []clusterShape{
	// A channel: an encoder pinning a core and a muxer beside it.
	{name: "2-job bundles", jobs: 2, milli: 1500, spec: func(i int) api.BundleSpec {
		return api.BundleSpec{ID: fmt.Sprintf("ch-%06d", i), Pool: clusterPool, Jobs: []api.Job{
			{Name: "enc", Requirements: api.Requirements{Capacity: 1, Cores: 1}},
			{Name: "mux", Requirements: api.Requirements{Capacity: 0.5}, CoLocateWith: []string{"enc"}},
		}}
	}},
	// A resilient channel: four jobs, and a backup copy in another AZ, as
	// C1M counted every allocation of a multi-task job.
	{name: "4-job bundles + backup", jobs: 8, milli: 2 * 2500, spec: func(i int) api.BundleSpec {
		return api.BundleSpec{ID: fmt.Sprintf("rc-%06d", i), Pool: clusterPool, Jobs: []api.Job{
			{Name: "ingest", Requirements: api.Requirements{Capacity: 0.5}},
			{Name: "enc", Requirements: api.Requirements{Capacity: 1, Cores: 1}, CoLocateWith: []string{"ingest"}},
			{Name: "pkg", Requirements: api.Requirements{Capacity: 0.5}},
			{Name: "mux", Requirements: api.Requirements{Capacity: 0.5}, CoLocateWith: []string{"pkg"}},
		}, Resilience: &api.Resilience{SameNode: api.Forbid, SameAz: api.Forbid, SameCloud: api.Allow}}
	}},
}

func runCluster(ctx context.Context, o Options) ([]Result, error) {
	jobs := clusterJobs
	if o.Quick {
		jobs = clusterJobs / 10
	}
	if err := clusterRoom(clusterNodes, jobs); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	logger := slog.New(slog.DiscardHandler) // raft's info logs would drown the table
	c, err := startBenchCluster(ctx, filepath.Join(o.Dir, "cluster"), 3, logger)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	defer func() {
		if err := c.close(); err != nil {
			progressf(o, "cluster: stopping: %v", err)
		}
	}()
	leader, err := c.waitLeader(ctx, 30*time.Second)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if err := registerClusterNodes(ctx, leader, clusterNodes); err != nil {
		return nil, fmt.Errorf("cluster: register nodes: %w", err)
	}
	var out []Result
	for _, shape := range clusterShapes {
		bundles := jobs / shape.jobs
		progressf(o, "cluster: %d nodes ready; submitting %d %s", clusterNodes, bundles, shape.name)
		m, err := submitAndWait(ctx, leader, shape, bundles)
		if err != nil {
			return out, fmt.Errorf("cluster: %s: %w", shape.name, err)
		}
		out = append(out, m.results()...)
		progressf(o, "cluster: submitting %d more %s, due together", bundles, shape.name)
		b, err := submitBurst(ctx, leader, shape, bundles, m.createRate())
		if err != nil {
			return out, fmt.Errorf("cluster: %s, burst of due starts: %w", shape.name, err)
		}
		out = append(out, b.result())
	}
	return out, nil
}

// registerClusterNodes registers nodes through Raft and marks them ready,
// as the leader's reconciler would once gossip saw them (these nodes have
// no gossip member, so nothing else touches their status).
func registerClusterNodes(ctx context.Context, leader *agent.Server, n int) error {
	if _, err := leader.Store().Apply(ctx, fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: fsm.Pool{Name: clusterPool, Kind: fsm.PoolCluster, Scoring: fsm.ScoringBinpack}}); err != nil {
		return fmt.Errorf("create pool: %w", err)
	}
	regs := make([]*fsm.RegisterNodeRequest, n)
	ready := make([]*fsm.NodeStatusRequest, n)
	for i := range n {
		node := clusterNode(i)
		regs[i] = &fsm.RegisterNodeRequest{Node: node}
		ready[i] = &fsm.NodeStatusRequest{NodeID: node.ID, Status: fsm.NodeReady, AZ: node.AZ(), Cloud: node.Cloud()}
	}
	if err := clusterApplyAll(ctx, leader, fsm.RegisterNodeType, regs); err != nil {
		return err
	}
	return clusterApplyAll(ctx, leader, fsm.NodeStatusType, ready)
}

// clusterNode is a node of 32..64 capacity units and 16..64 cores in one of
// 3 AZs and 2 clouds (deterministic in i).
func clusterNode(i int) fsm.Node {
	return fsm.Node{
		ID: fmt.Sprintf("w%05d", i), Pool: clusterPool, UtilizationCap: 1000,
		TotalCapacity: int64(32+i%33) * 1000, TotalCores: 16 + i%49,
		Labels: map[string]string{"az": fmt.Sprintf("az%d", i%3+1), "cloud": []string{"aws", "gcp"}[(i/3)%2]},
	}
}

// clusterRun is one submission's timeline.
type clusterRun struct {
	shape     clusterShape
	bundles   int
	submitted time.Duration // first submit → last create acknowledged
	placed    time.Duration // first submit → every job placed
	cpu       time.Duration // process CPU meanwhile: 3 servers and the client
}

// createRate is the bundles acknowledged per second while submitting.
func (m clusterRun) createRate() float64 { return float64(m.bundles) / m.submitted.Seconds() }

func (m clusterRun) results() []Result {
	jobs := float64(m.bundles * m.shape.jobs)
	rate := jobs / m.placed.Seconds()
	creates := m.createRate()
	note := fmt.Sprintf("%d bundles × %d placements, HTTP c=%d to the leader; creates acked at %.0f/s, all placed at %.2fs; %.0f µs CPU per job (3 servers + client)",
		m.bundles, m.shape.jobs, clusterConc, creates, m.placed.Seconds(), float64(m.cpu.Microseconds())/jobs)
	return []Result{
		{Suite: "cluster", Name: fmt.Sprintf("committed placements, %s, 3 servers, %d nodes", m.shape.name, clusterNodes), Value: rate,
			Unit: "jobs/s", Target: fmt.Sprintf(">= %d jobs/s", clusterTarget), Met: Met(rate >= clusterTarget), Note: note},
		{Suite: "cluster", Name: fmt.Sprintf("bundle creates acknowledged, %s", m.shape.name), Value: creates, Unit: "bundles/s",
			Note: "the submit phase alone, placement running alongside"},
	}
}

// submitAndWait submits bundles from clusterConc workers to the leader's
// HTTP API and waits until the leader's state shows all of them placed.
func submitAndWait(ctx context.Context, leader *agent.Server, shape clusterShape, bundles int) (clusterRun, error) {
	client, err := api.New(leader.HTTPAddr(), api.WithHTTPClient(clusterHTTP(clusterConc)))
	if err != nil {
		return clusterRun{}, fmt.Errorf("client: %w", err)
	}
	used := poolUsed(leader) // what the earlier runs hold
	m := clusterRun{shape: shape, bundles: bundles}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start, cpu := time.Now(), stateProcessCPU()
	submitErr := make(chan error, 1)
	go func() {
		err := submitAll(ctx, client, shape.spec, bundles)
		m.submitted = time.Since(start)
		if err != nil {
			cancel() // nothing more will be placed: stop waiting
		}
		submitErr <- err
	}()
	want := used + int64(bundles)*shape.milli
	if err := waitPlaced(wctx, leader, want, 10*time.Minute); err != nil {
		return m, errors.Join(<-submitErr, err)
	}
	m.placed, m.cpu = time.Since(start), stateProcessCPU()-cpu
	if err := <-submitErr; err != nil {
		return m, err
	}
	return m, nil
}

// poolUsed is the capacity the bench pool holds now, in milli-units.
func poolUsed(leader *agent.Server) int64 {
	if p := leader.Store().State().Pool(clusterPool); p != nil {
		return p.Usage.Capacity
	}
	return 0
}

// submitAll creates spec(1) … spec(bundles) from clusterConc workers.
func submitAll(ctx context.Context, client *api.Client, spec func(i int) api.BundleSpec, bundles int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clusterConc)
	for range clusterConc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)); i <= bundles; i = int(next.Add(1)) {
				if _, err := client.CreateBundle(ctx, spec(i)); err != nil {
					errs <- fmt.Errorf("create bundle %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs // nil when no worker failed
}

// waitPlaced polls the leader's state until the pool holds want milli-units:
// every bundle of a shape holds the same capacity once placed (its backup
// included), so the poll reads one pool row; the bundle listing then
// confirms that nothing is left waiting.
func waitPlaced(ctx context.Context, leader *agent.Server, want int64, within time.Duration) error {
	deadline := time.Now().Add(within)
	waiting := []string{fsm.StatePending, fsm.StateUnplaceable, fsm.StateDegraded, fsm.StateScheduled}
	for {
		st := leader.Store().State()
		p := st.Pool(clusterPool)
		if p != nil && p.Usage.Capacity >= want && len(st.BundlesInState(waiting...)) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v: %d bundles still waiting", within, len(st.BundlesInState(waiting...)))
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("waiting for placements: %w", err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
