package raftstore

import (
	"testing"
	"time"
)

// Raft's timeouts keep issue 21's failover promise at scale 1, stay valid
// for hashicorp/raft (lease <= heartbeat) and scale together.
func TestRaftConfigTimeouts(t *testing.T) {
	for _, tc := range []struct {
		scale     float64
		heartbeat time.Duration
	}{{0, 250 * time.Millisecond}, {1, 250 * time.Millisecond}, {2, 500 * time.Millisecond}, {0.2, 50 * time.Millisecond}} {
		rc := RaftConfig(Config{NodeID: "s1", TimeoutScale: tc.scale}, nil)
		if rc.HeartbeatTimeout != tc.heartbeat || rc.ElectionTimeout != tc.heartbeat {
			t.Errorf("scale %v: heartbeat %v, election %v, want %v", tc.scale, rc.HeartbeatTimeout, rc.ElectionTimeout, tc.heartbeat)
		}
		if rc.LeaderLeaseTimeout > rc.HeartbeatTimeout || rc.LeaderLeaseTimeout < rc.HeartbeatTimeout/2 {
			t.Errorf("scale %v: lease %v, want within [heartbeat/2, heartbeat]", tc.scale, rc.LeaderLeaseTimeout)
		}
		// A follower waits up to 2× the heartbeat timeout, then one vote
		// round: at scale 1 that must leave room for a write within 1 s.
		if tc.scale <= 1 && 2*rc.HeartbeatTimeout+rc.ElectionTimeout > 750*time.Millisecond {
			t.Errorf("scale %v: worst election %v leaves no room for a write within 1 s", tc.scale, 2*rc.HeartbeatTimeout+rc.ElectionTimeout)
		}
	}
}
