package bench

import (
	"fmt"
	"time"
)

// catchupLimit is the goal scaled to the bundles held, as the state
// suite scales its snapshot goal for a quick run.
func catchupLimit(bundles int) time.Duration {
	return catchupGoal * time.Duration(bundles) / 100_000
}

// catchupRows prints the catch-up against its goal and the install's
// steps, each from the restart's clock.
func catchupRows(m catchupRun) []Result {
	limit := catchupLimit(m.bundles)
	s := func(d time.Duration) float64 { return d.Seconds() }
	rs := []Result{{
		Suite: "catchup", Name: fmt.Sprintf("follower catch-up by snapshot, %d bundles", m.bundles), Value: s(m.caughtUp), Unit: "s",
		Target: fmt.Sprintf("<= %v", limit), Met: Met(m.caughtUp > 0 && m.caughtUp <= limit),
		Note: fmt.Sprintf("restart on its old data dir → applied index %d (the leader's commit index at the restart); it was stopped at index %d, "+
			"the leader's log then compacted to %d; 3 servers, TCP Raft on loopback, WAL log store on disk, fsync on. Loaded: %d bundles of the state suite's shape "+
			"created through Raft on the leader from %d goroutines (%d while the follower was down) and placed by the leader's placer on %d nodes, %.0f s, %d leader elections meanwhile; %d elections during the catch-up",
			m.target, m.followerLast, m.compactedTo, m.bundles, clusterConc, m.behind, stateNodes, m.load.Seconds(), m.elections, m.catchupElections),
	}}
	if m.opened > 0 {
		note := "NewServer + Start on the old data dir"
		if m.ownEnd > m.ownStart && m.ownStart > 0 {
			note += fmt.Sprintf("; of it, raft restored the follower's own stale snapshot (%.1f MiB) in %.2f s before the leader's could be taken",
				float64(m.ownSize)/(1<<20), s(m.ownEnd-m.ownStart))
		}
		rs = append(rs, Result{Suite: "catchup", Name: "catch-up: follower's server open", Value: s(m.opened), Unit: "s", Note: note})
	}
	if m.sent > 0 {
		rs = append(rs, Result{
			Suite: "catchup", Name: "catch-up: restart → leader starts InstallSnapshot", Value: s(m.sent), Unit: "s",
			Note: "the leader's replication to a peer it could not reach backs off (hashicorp/raft: up to 10.24 s); the follower's transport accepts the RPC before its open finishes",
		})
	}
	if m.copied > 0 && m.sent > 0 {
		rs = append(rs, Result{
			Suite: "catchup", Name: "catch-up: snapshot transfer to the follower's disk", Value: s(m.copied - max(m.sent, m.opened)), Unit: "s",
			Note: "the later of InstallSnapshot's start and the follower's open → the follower's copy finished (raft's log lines)",
		})
	}
	if m.restored > 0 && m.copied > 0 {
		rs = append(rs, Result{
			Suite: "catchup", Name: "catch-up: snapshot restore on the follower", Value: s(m.restored - m.copied), Unit: "s",
			Note: "copy finished → the follower's applied index passes the leader's compacted log (polled every 2 ms)",
		})
		rs = append(rs, Result{
			Suite: "catchup", Name: "catch-up: entries after the snapshot", Value: s(m.caughtUp - m.restored), Unit: "s",
			Note: "snapshot restored → applied index reaches the target",
		})
	}
	if m.size > 0 {
		rs = append(rs, Result{
			Suite: "catchup", Name: fmt.Sprintf("catch-up: snapshot size, %d bundles", m.bundles), Value: float64(m.size) / (1 << 20), Unit: "MiB",
			Note: fmt.Sprintf("the leader's forced snapshot took %.2f s", s(m.leaderSnap)),
		})
	}
	return rs
}
