package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/amserver/amserver/agent"
)

// The "catchup" suite (issue 19): a follower that fell behind far enough
// that the leader must send it a snapshot catches up within 5 s at
// 100,000 bundles (quick: 10,000). A 3-server cluster (catchup_cluster.go)
// is loaded with the state suite's bundles through Raft; one follower is
// stopped before the last tenth, the leader snapshots and compacts its log
// past the follower's last entry, and the follower starts again on its old
// data directory. The clock runs from that restart until the follower's
// applied index reaches the leader's commit index at the restart.

func init() { Suites["catchup"] = runCatchup }

const (
	catchupGoal = 5 * time.Second // per 100,000 bundles
	// catchupTrailing is the log the leader keeps after its forced
	// snapshot (raft's TrailingLogs, reloaded on the leader alone just
	// before it): far fewer entries than the follower missed.
	catchupTrailing = 128
)

// catchupRun is what one catch-up measured; durations from the restart
// are zero when the event was not seen.
type catchupRun struct {
	bundles, behind  int           // bundles in all; created while the follower was down
	elections        int           // leaders elected while loading (a loaded machine)
	catchupElections int           // leaders elected from the restart to the catch-up
	load             time.Duration // creating and placing every bundle
	leaderSnap       time.Duration // the leader's forced snapshot and compaction
	followerLast     uint64        // the follower's last log index when stopped
	compactedTo      uint64        // the leader's log starts after this
	target           uint64        // the leader's commit index at the restart
	ownStart, ownEnd time.Duration // the follower's restore of its own snapshot at start
	ownSize          int64         // that snapshot's bytes
	opened, sent     time.Duration // server open returned; leader began InstallSnapshot
	copied, restored time.Duration // snapshot on the follower's disk; its FSM restored from it
	caughtUp         time.Duration // applied index >= target
	size             int64         // snapshot bytes
}

func runCatchup(ctx context.Context, o Options) ([]Result, error) {
	bundles := 100_000
	if o.Quick {
		bundles = 10_000
	}
	c, err := startCatchupCluster(ctx, filepath.Join(o.Dir, "catchup"), o.Logger)
	if err != nil {
		return nil, fmt.Errorf("catchup: %w", err)
	}
	defer func() {
		if err := c.close(); err != nil {
			progressf(o, "catchup: stopping: %v", err)
		}
	}()
	m, err := c.run(ctx, o, bundles)
	if err != nil {
		return nil, fmt.Errorf("catchup: %w", err)
	}
	return catchupRows(m), nil
}

func (c *catchupCluster) run(ctx context.Context, o Options, bundles int) (catchupRun, error) {
	m := catchupRun{bundles: bundles, behind: bundles / 10}
	leader, err := c.waitLeader(ctx, 60*time.Second)
	if err != nil {
		return m, err
	}
	if err := registerClusterNodes(ctx, leader, stateNodes); err != nil {
		return m, fmt.Errorf("register nodes: %w", err)
	}
	start := time.Now()
	progressf(o, "catchup: %d nodes ready; creating %d bundles", stateNodes, bundles-m.behind)
	if err := c.load(ctx, 0, bundles-m.behind); err != nil {
		return m, err
	}
	if leader, err = c.waitLeader(ctx, 60*time.Second); err != nil {
		return m, err
	}
	fi := c.follower(leader)
	follower := c.servers[fi]
	m.followerLast = follower.Store().LastIndex()
	if err := follower.Kill(); err != nil {
		return m, fmt.Errorf("stop follower %s: %w", follower.NodeID(), err)
	}
	progressf(o, "catchup: %d bundles placed in %v; follower %s stopped at index %d; creating %d more",
		bundles-m.behind, time.Since(start).Round(time.Second), follower.NodeID(), m.followerLast, m.behind)
	if err := c.load(ctx, bundles-m.behind, bundles); err != nil {
		return m, err
	}
	m.load = time.Since(start)
	m.elections = len(c.events.since(start, "", msgLeader))
	if leader, err = c.waitLeader(ctx, 60*time.Second); err != nil {
		return m, err
	}
	if err := c.compact(leader, &m); err != nil {
		return m, err
	}
	progressf(o, "catchup: leader snapshot in %v, log compacted to %d; restarting %s", m.leaderSnap.Round(time.Millisecond), m.compactedTo, follower.NodeID())
	if err := c.restart(ctx, leader, fi, &m); err != nil {
		return m, err
	}
	return m, nil
}

// load creates bundles [from, to) and waits until the leader's state
// shows all of them placed.
func (c *catchupCluster) load(ctx context.Context, from, to int) error {
	if err := c.create(ctx, from, to); err != nil {
		return err
	}
	leader, err := c.waitLeader(ctx, 60*time.Second)
	if err != nil {
		return err
	}
	const milli = 750 // what one stateSpec bundle holds once placed
	if err := waitPlaced(ctx, leader, int64(to)*milli, 10*time.Minute); err != nil {
		return fmt.Errorf("placing bundles: %w", err)
	}
	return nil
}

// follower is the index of the first server that is not leader.
func (c *catchupCluster) follower(leader *agent.Server) int {
	for i, s := range c.servers {
		if s != leader {
			return i
		}
	}
	return -1 // a 3-server cluster always has one
}

// compact makes the leader snapshot now and keep only catchupTrailing
// entries of its log, then checks that the stopped follower's next entry
// is gone from it.
func (c *catchupCluster) compact(leader *agent.Server, m *catchupRun) error {
	r := leader.Raft()
	rc := r.ReloadableConfig()
	rc.TrailingLogs = catchupTrailing
	if err := r.ReloadConfig(rc); err != nil {
		return fmt.Errorf("reload leader's raft config: %w", err)
	}
	began := time.Now()
	if err := r.Snapshot().Error(); err != nil {
		return fmt.Errorf("leader snapshot: %w", err)
	}
	m.leaderSnap = time.Since(began)
	evs := c.events.since(began, leader.NodeID(), msgSnapCompacted)
	if len(evs) == 0 {
		return errors.New("the leader's snapshot compacted no log")
	}
	to, err := strconv.ParseUint(evs[len(evs)-1].attrs["to"], 10, 64)
	if err != nil {
		return fmt.Errorf("compaction event: %w", err)
	}
	m.compactedTo = to
	if to <= m.followerLast {
		return fmt.Errorf("the leader kept its log from %d, the follower's next entry (%d) is still there", to+1, m.followerLast+1)
	}
	return nil
}

// restart starts the stopped follower fi on its data directory and waits
// for its applied index to reach the leader's commit index at the restart.
func (c *catchupCluster) restart(ctx context.Context, leader *agent.Server, fi int, m *catchupRun) error {
	target, err := strconv.ParseUint(leader.Raft().Stats()["commit_index"], 10, 64)
	if err != nil {
		return fmt.Errorf("leader's commit index: %w", err)
	}
	m.target = target
	t0 := time.Now()
	if err := c.start(ctx, fi); err != nil {
		return err
	}
	m.opened = time.Since(t0)
	follower := c.servers[fi]
	deadline := t0.Add(5 * time.Minute)
	for {
		applied := follower.Store().AppliedIndex()
		if m.restored == 0 && applied > m.compactedTo { // only a snapshot brings it past the leader's compacted log
			m.restored = time.Since(t0)
		}
		if applied >= target {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("follower applied %d of %d after 5 minutes", follower.Store().AppliedIndex(), target)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("waiting for the follower: %w", err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	m.caughtUp = time.Since(t0)
	return c.timeline(t0, leader.NodeID(), follower.NodeID(), m)
}

// timeline reads the snapshot install's steps from raft's log lines.
func (c *catchupCluster) timeline(t0 time.Time, leaderID, followerID string, m *catchupRun) error {
	m.catchupElections = len(c.events.since(t0, "", msgLeader))
	for _, ev := range c.events.since(t0, leaderID, msgSnapSend) {
		if ev.attrs["peer"] == followerID {
			m.sent = ev.at.Sub(t0)
			break
		}
	}
	if m.sent == 0 {
		return errors.New("the leader sent the restarted follower no snapshot: it caught up from the log, which is not what this suite measures")
	}
	if evs := c.events.since(t0, followerID, msgOwnRestore); len(evs) > 0 {
		m.ownStart = evs[0].at.Sub(t0)
		m.ownSize, _ = strconv.ParseInt(evs[0].attrs["size-in-bytes"], 10, 64) //nolint:errcheck // 0 when absent
	}
	if evs := c.events.since(t0, followerID, msgOwnRestored); len(evs) > 0 {
		m.ownEnd = evs[0].at.Sub(t0)
	}
	if evs := c.events.since(t0, followerID, msgSnapCopied); len(evs) > 0 {
		m.copied = evs[0].at.Sub(t0)
		m.size, _ = strconv.ParseInt(evs[0].attrs["bytes"], 10, 64) //nolint:errcheck // raft logs an int64; 0 when absent
	}
	return nil
}
