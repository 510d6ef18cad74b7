package agent_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
	"github.com/amserver/amserver/internal/testcluster"
)

func TestClusterElectsOneLeader(t *testing.T) {
	c := testcluster.New(t, 3)
	leader := c.Leader()
	for _, s := range c.Servers() {
		l, err := c.Client(s).Leader(ctxTimeout(t, 10*time.Second))
		if err != nil {
			t.Fatalf("%s: %v", s.NodeID(), err)
		}
		if l.ID != leader.NodeID() {
			t.Fatalf("%s reports leader %s, want %s", s.NodeID(), l.ID, leader.NodeID())
		}
	}
	peers, err := c.Client(leader).Peers(ctxTimeout(t, 10*time.Second))
	if err != nil || len(peers) != 3 {
		t.Fatalf("peers %+v err %v", peers, err)
	}
}

// TestWritesForwardAndReadsLinearizable: a write on a follower reaches the
// leader, and a default read on any server right after sees it.
func TestWritesForwardAndReadsLinearizable(t *testing.T) {
	c := testcluster.New(t, 3)
	leader := c.Leader()
	ctx := ctxTimeout(t, 20*time.Second)
	for i, f := range c.Followers(leader) {
		name := fmt.Sprintf("pool-%d", i)
		if _, err := c.Client(f).PutPool(ctx, testPool(name)); err != nil {
			t.Fatalf("write on follower %s: %v", f.NodeID(), err)
		}
		for _, s := range c.Servers() {
			p, _, err := c.Client(s).Pool(ctx, name, nil)
			if err != nil || p.Name != name {
				t.Fatalf("read on %s right after the write: %+v %v", s.NodeID(), p, err)
			}
		}
	}
	if got := leader.FSM().State().Pool("pool-0"); got == nil {
		t.Fatal("forwarded write is not in the leader's state")
	}
}

// TestLeaderLossKeepsAcknowledgedWrites: kill the leader; a new one is
// elected and every acknowledged write is present.
func TestLeaderLossKeepsAcknowledgedWrites(t *testing.T) {
	c := testcluster.New(t, 3)
	leader := c.Leader()
	ctx := ctxTimeout(t, 30*time.Second)
	var acked []string
	for i := range 20 {
		name := fmt.Sprintf("p%02d", i)
		if _, err := c.Client(c.Servers()[i%3]).PutPool(ctx, testPool(name)); err == nil {
			acked = append(acked, name)
		}
	}
	if len(acked) != 20 {
		t.Fatalf("only %d of 20 writes acknowledged with a healthy cluster", len(acked))
	}
	_ = leader.Kill()
	next := c.Leader(leader)
	if next == leader {
		t.Fatal("killed leader still leads")
	}
	for _, s := range c.Followers(leader) {
		for _, name := range acked {
			if _, _, err := c.Client(s).Pool(ctx, name, nil); err != nil {
				t.Fatalf("acknowledged pool %s missing on %s: %v", name, s.NodeID(), err)
			}
		}
	}
	if _, err := c.Client(next).PutPool(ctx, testPool("after")); err != nil {
		t.Fatalf("write after failover: %v", err)
	}
}

// TestPartitionedLeaderRefusesDefaultReads: a leader cut off from its peers
// must not serve a default read; ?stale is served with the contact headers.
func TestPartitionedLeaderRefusesDefaultReads(t *testing.T) {
	c := testcluster.New(t, 3)
	old := c.Leader()
	ctx := ctxTimeout(t, 30*time.Second)
	if _, err := c.Client(old).PutPool(ctx, testPool("before")); err != nil {
		t.Fatal(err)
	}
	c.Isolate(old)
	next := c.Leader(old)
	if _, err := c.Client(next).PutPool(ctx, testPool("after")); err != nil {
		t.Fatalf("majority write: %v", err)
	}

	// No retries: the check is on the server's answer. The client would
	// retry a noLeader answer for about 5 s (DefaultMaxRetries), past
	// this context on a slow machine.
	short := ctxTimeout(t, 5*time.Second)
	_, _, err := c.Client(old, api.WithMaxRetries(0)).Pool(short, "after", nil)
	var apiErr *api.Error
	if err == nil || !errors.As(err, &apiErr) || apiErr.Status != http.StatusServiceUnavailable {
		t.Fatalf("default read on the isolated old leader: want 503, got %v", err)
	}
	p, meta, err := c.Client(old).Pool(ctx, "before", &api.QueryOptions{Stale: true})
	if err != nil || p.Name != "before" {
		t.Fatalf("stale read on the isolated server: %+v %v", p, err)
	}
	if meta.LastContact <= 0 {
		t.Fatalf("stale read must report last contact, got %v", meta.LastContact)
	}
}

// TestSnapshotSaveRestore: an operator snapshot restores the whole state,
// discarding what was written after it, on every server; writes go on
// after it. On disk (the WAL, which takes no gap in its log) Raft drops the
// log at the restore, as the index it skips would be one.
func TestSnapshotSaveRestore(t *testing.T) {
	for name, opts := range map[string][]testcluster.Option{"memory": nil, "tcp, on disk": {testcluster.TCP()}} {
		t.Run(name, func(t *testing.T) { testSnapshotSaveRestore(t, testcluster.New(t, 3, opts...)) })
	}
}

func testSnapshotSaveRestore(t *testing.T, c *testcluster.Cluster) {
	leader := c.Leader()
	ctx := ctxTimeout(t, 30*time.Second)
	cl := c.Client(c.Followers(leader)[0])
	if _, err := cl.PutPool(ctx, testPool("kept")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := cl.SnapshotSave(ctx, &buf); err != nil {
		t.Fatalf("save: %v", err)
	}
	if _, err := cl.PutPool(ctx, testPool("dropped")); err != nil {
		t.Fatal(err)
	}
	if err := cl.SnapshotRestore(ctx, bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatalf("restore: %v", err)
	}
	for _, s := range c.Servers() {
		sc := c.Client(s)
		if _, _, err := sc.Pool(ctx, "kept", nil); err != nil {
			t.Fatalf("%s lost the snapshotted pool: %v", s.NodeID(), err)
		}
		if _, _, err := sc.Pool(ctx, "dropped", nil); !api.IsCode(err, api.CodeNotFound) {
			t.Fatalf("%s still has the pool written after the snapshot: %v", s.NodeID(), err)
		}
	}
	if err := cl.SnapshotRestore(ctx, bytes.NewReader([]byte("garbage"))); err == nil {
		t.Fatal("restoring garbage must fail")
	}
	if _, err := cl.PutPool(ctx, testPool("after")); err != nil {
		t.Fatalf("a write after the restore: %v", err)
	}
}

// TestLaggingFollowerInstallsSnapshot: a follower cut off while the leader
// snapshots and truncates its log catches up through InstallSnapshot, which
// runs FSM.Restore on a non-empty state.
func TestLaggingFollowerInstallsSnapshot(t *testing.T) {
	c := testcluster.New(t, 3)
	leader := c.Leader()
	lagging := c.Followers(leader)[0]
	ctx := ctxTimeout(t, 60*time.Second)
	lc := c.Client(leader)
	if _, err := lc.PutPool(ctx, testPool("early")); err != nil {
		t.Fatal(err)
	}
	c.Isolate(lagging)
	for i := range 100 {
		if _, err := lc.PutPool(ctx, testPool(fmt.Sprintf("late-%03d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := leader.Raft().Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	c.Heal(lagging)
	poll.Eventually(t, 30*time.Second, "the lagging follower to catch up", func() error {
		return poll.Check(lagging.FSM().State().Pool("late-099") != nil, "%s applied up to %d", lagging.NodeID(), lagging.Store().AppliedIndex())
	})
	if leader.FSM().State().Index() != lagging.FSM().State().Index() {
		t.Fatalf("indexes differ after catch-up: leader %d follower %d", leader.FSM().State().Index(), lagging.FSM().State().Index())
	}
	if got := lagging.Raft().Stats()["last_snapshot_index"]; got == "0" {
		t.Fatal("the follower caught up without installing a snapshot")
	}
}

// TestStateDigestAgreesAcrossServers: every server answers its own digest;
// once all have applied the same writes the digests match, and a further
// write changes it.
func TestStateDigestAgreesAcrossServers(t *testing.T) {
	c := testcluster.New(t, 3)
	leader := c.Leader()
	ctx := ctxTimeout(t, 20*time.Second)
	digests := func() map[string]*api.StateDigest {
		out := map[string]*api.StateDigest{}
		for _, s := range c.Servers() {
			d, err := c.Client(s).StateDigest(ctx)
			if err != nil {
				t.Fatalf("digest of %s: %v", s.NodeID(), err)
			}
			if d.ServerID != s.NodeID() {
				t.Fatalf("asked %s, answered by %s: the digest must never be forwarded", s.NodeID(), d.ServerID)
			}
			out[s.NodeID()] = d
		}
		return out
	}
	converged := func() string {
		var digest string
		poll.Eventually(t, 10*time.Second, "the servers' digests to agree", func() error {
			ds := digests()
			first := ds[leader.NodeID()]
			for _, d := range ds {
				if d.Index != first.Index || d.Digest != first.Digest {
					return fmt.Errorf("%s has %d %s, the leader %d %s", d.ServerID, d.Index, d.Digest, first.Index, first.Digest)
				}
			}
			digest = first.Digest
			return nil
		})
		return digest
	}
	if _, err := c.Client(leader).PutPool(ctx, testPool("a")); err != nil {
		t.Fatal(err)
	}
	before := converged()
	if _, err := c.Client(leader).PutPool(ctx, testPool("b")); err != nil {
		t.Fatal(err)
	}
	if after := converged(); after == before {
		t.Fatal("a write did not change the digest")
	}
}
