//go:build upgrade

package upgrade

import (
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/amserver/amserver/internal/poll"
)

// TestNewLeaderBeforeUpgradeEnds: leadership can move to an upgraded
// server before the old ones are upgraded (an election the operator did
// not ask for: a stalled or crashed leader, or transfer-leadership to it).
// A service rollout and a node service apply then must neither crash the
// old followers nor make the servers' states differ: the new leader uses
// what the old servers cannot apply (RolloutSettled, SettleRollout, a
// service apply's Update) only once every server advertises the new
// command level in gossip. Once the upgrade is finished, it does.
// Against f783f6f without that gate, the new leader's RolloutSettled
// (type 41) stopped both old followers and the cluster lost its quorum.
func TestNewLeaderBeforeUpgradeEnds(t *testing.T) {
	oldBin, newBin := os.Getenv("AMSERVER_UPGRADE_OLD"), os.Getenv("AMSERVER_UPGRADE_NEW")
	if oldBin == "" || newBin == "" {
		t.Skip("AMSERVER_UPGRADE_OLD and AMSERVER_UPGRADE_NEW name the binaries: run make upgrade-check BASE=<ref>")
	}
	l := newLayout(t, oldBin)
	all := slices.Concat(l.servers, l.workers)
	t.Cleanup(func() {
		for _, p := range all {
			p.stop(t, syscall.SIGKILL)
		}
	})
	for _, p := range all {
		l.start(t, p, newBin)
	}
	c := l.servers[0].client(t)
	leader := l.healthy(t, 90*time.Second)
	seed(t, c)
	oldSnapshot(t, l, c)
	s := restartOrder(l.servers, leader)[0]
	// The old leader adds s back from its gossip meta, which carries the
	// new FSMLevel after the fields the old binary reads: it ignores it.
	upgradeServer(t, l, s, newBin)
	if err := c.TransferLeadership(t.Context(), s.id); err != nil {
		t.Fatalf("transfer leadership to the upgraded %s: %v", s.id, err)
	}
	if got := l.healthy(t, 30*time.Second); got != s {
		t.Fatalf("leader %s, want the upgraded %s", got.id, s.id)
	}
	sc := s.client(t)
	if _, err := sc.ReplaceBundle(t.Context(), webSpec("2"), 0); err != nil {
		t.Fatalf("replace web's launch through the new leader: %v", err)
	}
	poll.Eventually(t, 60*time.Second, "the new leader's rollout done, every server running", func() error {
		for _, p := range l.servers {
			if done, err := p.exited(); done {
				t.Fatalf("%s (%s) exited during the new leader's rollout: %v: %s", p.id, p.bin, err, panicLine(p))
			}
		}
		b, _, err := sc.Bundle(t.Context(), "web", nil)
		if err != nil {
			return err
		}
		return poll.Check(b.Generation == 1 && !b.Rolling && allRunning(b), "web: generation %d, rolling %v", b.Generation, b.Rolling)
	})
	t.Log(l.digestsAgree(t, 30*time.Second))
	// The old followers would ignore a service apply's Update: the new
	// leader leaves it out, and the apply changes the record only.
	putServiceRecordOnly(t, sc, "1b")
	l.running(t)
	t.Log(l.digestsAgree(t, 30*time.Second))

	for _, o := range l.servers {
		if o != s {
			t.Log(o.id, upgradeServer(t, l, o, newBin))
		}
	}
	// Every server new: the leader settles rollouts and updates services.
	if took := rollout(t, sc, "3", 2); took < 2*time.Second {
		t.Errorf("the rollout of 3 replicas took %s: the settle window of 1 s was not kept", took)
	}
	applyService(t, newBin, s, sc)
	l.running(t)
	t.Log(l.digestsAgree(t, 30*time.Second))
}
