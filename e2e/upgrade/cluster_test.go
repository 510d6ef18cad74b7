//go:build upgrade

package upgrade

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
)

// healthy waits for docs/operations.md §5 step 4 on every server: each
// answers, all name the same leader, the leader lists every server as an
// alive voter, every server's index is within reach of the leader's, and
// every worker's node is ready.
func (l *layout) healthy(t *testing.T, within time.Duration) *proc {
	t.Helper()
	var leader *proc
	poll.Eventually(t, within, "every server healthy, a voter and caught up, every worker ready", func() error {
		var err error
		leader, err = l.checkHealthy(t)
		return err
	})
	return leader
}

func (l *layout) checkHealthy(t *testing.T) (*proc, error) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	l.running(t)
	leaderID := ""
	index := map[string]uint64{}
	for _, s := range l.servers {
		h, err := s.client(t).Health(ctx)
		if err != nil {
			return nil, fmt.Errorf("health of %s: %w", s.id, err)
		}
		if !h.KnownLeader || (leaderID != "" && h.Leader != leaderID) {
			return nil, fmt.Errorf("%s names leader %q, others %q", s.id, h.Leader, leaderID)
		}
		leaderID, index[s.id] = h.Leader, h.Index
	}
	leader := l.server(leaderID)
	if leader == nil {
		return nil, fmt.Errorf("leader %q is none of the servers", leaderID)
	}
	lc := leader.client(t)
	peers, err := lc.Peers(ctx)
	if err != nil {
		return nil, fmt.Errorf("peers from %s: %w", leader.id, err)
	}
	voters := 0
	for _, p := range peers {
		if p.Suffrage == "voter" && p.Status == "alive" {
			voters++
		}
	}
	if voters != len(l.servers) || len(peers) != len(l.servers) {
		return nil, fmt.Errorf("leader %s lists %d alive voters of %d peers: %+v", leader.id, voters, len(peers), peers)
	}
	for id, i := range index {
		// Caught up: within a few entries of the leader (writes go on).
		if i+200 < index[leader.id] {
			return nil, fmt.Errorf("%s at index %d, leader at %d", id, i, index[leader.id])
		}
	}
	nodes, _, err := lc.Nodes(ctx, api.NodeFilter{Status: api.NodeReady}, nil)
	if err != nil {
		return nil, fmt.Errorf("nodes from %s: %w", leader.id, err)
	}
	if len(nodes) != len(l.workers) {
		return nil, fmt.Errorf("%d of %d workers ready", len(nodes), len(l.workers))
	}
	return leader, nil
}

// running fails the test at once when a server or worker has exited:
// waiting on for it to answer would only hide why.
func (l *layout) running(t *testing.T) {
	t.Helper()
	for _, p := range slices.Concat(l.servers, l.workers) {
		if done, err := p.exited(); done {
			t.Fatalf("%s (%s) exited: %v\n%s", p.id, p.bin, err, p.tail(30))
		}
	}
}

func (l *layout) server(id string) *proc {
	for _, s := range l.servers {
		if s.id == id {
			return s
		}
	}
	return nil
}

// digestsAgree waits until every server reports the same index, and then
// requires the same state digest at it (docs/operations.md §2.3: servers
// at the same index must agree). Writes must be paused: the leader's own
// commands (status reports, timers) still move the index, so it polls.
func (l *layout) digestsAgree(t *testing.T, within time.Duration) string {
	t.Helper()
	var agreed string
	poll.Eventually(t, within, "every server at one index with one digest", func() error {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		var ds []*api.StateDigest
		for _, s := range l.servers {
			d, err := s.client(t).StateDigest(ctx)
			if err != nil {
				return fmt.Errorf("digest of %s: %w", s.id, err)
			}
			ds = append(ds, d)
		}
		for _, d := range ds[1:] {
			if d.Index != ds[0].Index {
				return fmt.Errorf("indexes differ: %s", digestList(ds))
			}
		}
		for _, d := range ds[1:] {
			if d.Digest != ds[0].Digest {
				t.Fatalf("servers at the same index disagree on the state: %s", digestList(ds))
			}
		}
		agreed = fmt.Sprintf("index %d digest %.12s", ds[0].Index, ds[0].Digest)
		return nil
	})
	return agreed
}

func digestList(ds []*api.StateDigest) string {
	s := ""
	for _, d := range ds {
		s += fmt.Sprintf(" %s@%d=%.12s", d.ServerID, d.Index, d.Digest)
	}
	return s
}

// rejoined waits for the events of docs/operations.md §5 steps 2 and 4
// after index from: the leader removed server id from Raft when it left
// (serverRemoved) and added it back when it returned (serverJoined). When
// the leader did not act on the leave (gossip took it for a failure, or a
// leader elected meanwhile found the server back already) the server keeps
// its vote, and being healthy again is all there is to wait for. It says
// which happened.
func (l *layout) rejoined(t *testing.T, id string, from uint64) string {
	t.Helper()
	other := l.servers[0]
	if other.id == id {
		other = l.servers[1]
	}
	errBoth := errors.New("removed and joined")
	note := ""
	poll.Eventually(t, 60*time.Second, id+" a voter again (removed and joined again, or never removed)", func() error {
		l.running(t)
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		removed := false
		err := other.client(t).Events(ctx, from, func(e api.Event) error {
			switch {
			case e.NodeID != id:
			case e.Type == api.EventServerRemoved:
				removed = true
			case e.Type == api.EventServerJoined && removed:
				return errBoth
			}
			return nil
		})
		if errors.Is(err, errBoth) {
			note = "removed from Raft and joined again"
			return nil
		}
		if !removed {
			if _, herr := l.checkHealthy(t); herr == nil {
				note = "kept its vote (no serverRemoved)"
				return nil
			}
		}
		return fmt.Errorf("events of %s after index %d: removed %v, then no join: %w", id, from, removed, err)
	})
	return note
}
