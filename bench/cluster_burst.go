package bench

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
)

// The cluster suite's second run per shape: placement alone. As many
// bundles again are created over HTTP exactly as in the combined run, but
// with one common startAt ahead, so they are created `scheduled` and none is
// placed. At startAt the leader's timers duty proposes a Timer entry that
// makes them pending, and the placer places them in plans (at most 512
// bundles each). The clock runs from the leader's state first showing them
// leave `scheduled` until every job of them is placed: placement passes,
// plan commits and every replica's apply are inside it, the creates are not.

const (
	// The common startAt lies burstLeadFactor times the time the combined
	// run's create rate needs for the bundles, plus burstLeadSlack, after
	// the submit starts; a submit that still ends after it is an error.
	burstLeadFactor = 3
	burstLeadSlack  = 5 * time.Second
	// The timers duty wakes at startAt (at most a second late): a Timer entry not applied this
	// long after startAt is a stall, not a slow figure.
	burstLeaveWithin = 30 * time.Second
	burstIDPrefix    = "due-" // the combined run's ids, prefixed
	// clusterRunsPerShape: combined, then burst; both stay placed.
	clusterRunsPerShape = 2
	// clusterRoomShare bounds the share of the pool's capacity or pinned
	// cores that every run together may hold: binpacking strands what a
	// node has left in one dimension once the other is full (a 16-core
	// node of 64 units is out of cores after 16 2-job bundles, 24 units),
	// so the totals alone would promise room the nodes do not have.
	clusterRoomShare = 0.5
)

// burstLead is how long after the submit starts the common startAt lies,
// from the create rate (bundles/s) the combined run measured for the shape.
func burstLead(bundles int, createRate float64) (time.Duration, error) {
	if bundles <= 0 || math.IsNaN(createRate) || math.IsInf(createRate, 0) || createRate <= 0 {
		return 0, fmt.Errorf("no lead for %d bundles at %v creates/s", bundles, createRate)
	}
	secs := float64(bundles) / createRate * burstLeadFactor
	return time.Duration(secs*float64(time.Second)) + burstLeadSlack, nil
}

// burstSpec is the shape's bundle i under a burst id, starting at at.
func burstSpec(shape clusterShape, at time.Time) func(i int) api.BundleSpec {
	start := at.UTC().Format(time.RFC3339Nano)
	return func(i int) api.BundleSpec {
		s := shape.spec(i)
		s.ID, s.StartAt = burstIDPrefix+s.ID, start
		return s
	}
}

// shapeHolds is what one placed bundle of the shape holds, from its spec:
// capacity in milli-units and pinned cores, a backup doubling both.
func shapeHolds(shape clusterShape) (milli, cores int64) {
	s := shape.spec(1)
	for _, j := range s.Jobs {
		milli += int64(math.Round(j.Requirements.Capacity * 1000))
		cores += int64(j.Requirements.Cores)
	}
	if s.Resilience != nil {
		milli, cores = 2*milli, 2*cores
	}
	return milli, cores
}

// clusterShares is the share of the pool's allocatable capacity and of its
// cores that every run of the suite holds at its end: nothing is deleted
// between runs, so each shape holds clusterRunsPerShape × its bundles.
func clusterShares(nodes, jobs int) (capacity, cores float64) {
	var haveMilli, haveCores, needMilli, needCores int64
	for i := range nodes {
		n := clusterNode(i)
		haveMilli += n.Allocatable()
		haveCores += int64(n.TotalCores)
	}
	for _, shape := range clusterShapes {
		milli, c := shapeHolds(shape)
		bundles := int64(clusterRunsPerShape * (jobs / shape.jobs))
		needMilli += bundles * milli
		needCores += bundles * c
	}
	if haveMilli == 0 || haveCores == 0 {
		return math.Inf(1), math.Inf(1)
	}
	return float64(needMilli) / float64(haveMilli), float64(needCores) / float64(haveCores)
}

// clusterRoom refuses a run whose shapes would hold more than
// clusterRoomShare of the pool.
func clusterRoom(nodes, jobs int) error {
	capacity, cores := clusterShares(nodes, jobs)
	if capacity > clusterRoomShare || cores > clusterRoomShare {
		return fmt.Errorf("%d jobs per run would hold %.0f %% of %d nodes' capacity and %.0f %% of their cores, over %.0f %%",
			jobs, 100*capacity, nodes, 100*cores, 100*clusterRoomShare)
	}
	return nil
}

// burstRun is one burst's timeline, each span from the instant before it.
type burstRun struct {
	shape     clusterShape
	bundles   int
	lead      time.Duration // submit start → startAt
	submitted time.Duration // submit start → last create acknowledged
	timer     time.Duration // startAt → the leader's state shows bundles leaving scheduled
	firstLeft int           // how many had left in that first state
	placed    time.Duration // first leaving → every job placed
	entries   uint64        // Raft entries applied on the leader meanwhile
	cpu       time.Duration // process CPU meanwhile: 3 servers and the client
}

// checkSubmit refuses a burst whose last create was acknowledged at or
// after startAt: bundles created then are pending at once, and placement
// would overlap the creates the row claims to leave out.
func (m burstRun) checkSubmit() error {
	if m.submitted >= m.lead {
		return fmt.Errorf("the submit of %d bundles took %v, past the startAt %v after its start: creates ran below 1/%d of the combined run's rate",
			m.bundles, m.submitted.Round(time.Millisecond), m.lead.Round(time.Millisecond), burstLeadFactor)
	}
	return nil
}

func (m burstRun) result() Result {
	jobs := float64(m.bundles * m.shape.jobs)
	rate := jobs / m.placed.Seconds()
	at := "in one Timer entry"
	if m.firstLeft < m.bundles {
		at = fmt.Sprintf("%d of them in the first state showing any", m.firstLeft)
	}
	note := fmt.Sprintf("%d bundles × %d placements created scheduled (HTTP c=%d, %.2fs, done %.2fs before their common startAt), "+
		"then due together; left scheduled %s %.3fs after startAt (the timers duty wakes at the earliest startAt; the entry's commit included), all placed %.2fs later over %s; "+
		"the clock runs from leaving scheduled to all placed, creates were not in the window; %.0f µs CPU per job (3 servers + client)",
		m.bundles, m.shape.jobs, clusterConc, m.submitted.Seconds(), (m.lead - m.submitted).Seconds(),
		at, m.timer.Seconds(), m.placed.Seconds(), raftEntries(m.entries), float64(m.cpu.Microseconds())/jobs)
	return Result{
		Suite: "cluster", Name: fmt.Sprintf("committed placements, %s, burst of due starts (placement alone)", m.shape.name),
		Value: rate, Unit: "jobs/s", Target: fmt.Sprintf(">= %d jobs/s", clusterTarget), Met: Met(rate >= clusterTarget), Note: note,
	}
}

// submitBurst creates bundles of the shape due at one startAt ahead, waits
// for the leader to make them pending and clocks their placement.
func submitBurst(ctx context.Context, leader *agent.Server, shape clusterShape, bundles int, createRate float64) (burstRun, error) {
	client, err := api.New(leader.HTTPAddr(), api.WithHTTPClient(clusterHTTP(clusterConc)))
	if err != nil {
		return burstRun{}, fmt.Errorf("client: %w", err)
	}
	lead, err := burstLead(bundles, createRate)
	if err != nil {
		return burstRun{}, err
	}
	used := poolUsed(leader) // what the earlier runs hold
	m := burstRun{shape: shape, bundles: bundles, lead: lead}
	start := time.Now()
	at := start.Add(lead)
	err = submitAll(ctx, client, burstSpec(shape, at), bundles)
	m.submitted = time.Since(start)
	if err != nil {
		return m, err
	}
	if err := m.checkSubmit(); err != nil {
		return m, err
	}
	if n := len(leader.Store().State().BundlesInState(fsm.StateScheduled)); n != bundles {
		return m, fmt.Errorf("%d bundles scheduled after the submit, want %d", n, bundles)
	}
	left, n, err := waitLeftScheduled(ctx, leader, bundles, at.Add(burstLeaveWithin))
	if err != nil {
		return m, err
	}
	m.timer, m.firstLeft = left.Sub(at), n
	cpu, index := stateProcessCPU(), leader.Store().AppliedIndex()
	if err := waitPlaced(ctx, leader, used+int64(bundles)*shape.milli, 10*time.Minute); err != nil {
		return m, err
	}
	m.placed, m.cpu = time.Since(left), stateProcessCPU()-cpu
	m.entries = leader.Store().AppliedIndex() - index
	return m, nil
}

// waitLeftScheduled polls the leader's state every 2 ms until fewer than
// bundles are scheduled (every scheduled bundle is the burst's: the earlier
// runs wait until none is), and returns when it saw that and how many had
// left. The count is read only when the bundles table changed.
func waitLeftScheduled(ctx context.Context, leader *agent.Server, bundles int, deadline time.Time) (time.Time, int, error) {
	var seen uint64
	for {
		now := time.Now()
		st := leader.Store().State()
		if idx := st.Index("bundles"); idx != seen {
			seen = idx
			if left := bundles - len(st.BundlesInState(fsm.StateScheduled)); left > 0 {
				return now, left, nil
			}
		}
		if now.After(deadline) {
			return now, 0, fmt.Errorf("none of %d bundles left scheduled within %v of their startAt: no Timer entry applied", bundles, burstLeaveWithin)
		}
		if err := ctx.Err(); err != nil {
			return now, 0, fmt.Errorf("waiting for the Timer entry: %w", err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// raftEntries is "1 Raft entry" or "n Raft entries".
func raftEntries(n uint64) string {
	if n == 1 {
		return "1 Raft entry"
	}
	return fmt.Sprintf("%d Raft entries", n)
}
