package agent_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/internal/poll"
	"github.com/amserver/amserver/internal/testcluster"
	"github.com/amserver/amserver/worker"
)

func gossipKey(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

// calmGossip is loopback gossip with probe timings a loaded test machine
// meets without false suspicions, so a suspicion during the test is the
// rotation's doing.
func calmGossip(key []byte) gossip.Config {
	gc := testcluster.LoopbackGossip()
	gc.SecretKey = key
	gc.ProbeInterval, gc.ProbeTimeout = time.Second, 500*time.Millisecond
	return gc
}

// aliveWatch records the first moment any observer sees any of the
// expected members as anything but alive.
type aliveWatch struct {
	mu        sync.Mutex
	violation string
	stop      chan struct{}
	done      chan struct{}
}

func watchAlive(observers map[string]*gossip.Gossip) *aliveWatch {
	w := &aliveWatch{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			for name, g := range observers {
				for other := range observers {
					if m, ok := g.Member(other); !ok || m.Status != gossip.StatusAlive {
						w.record(fmt.Sprintf("%s saw %s as %q (known %v)", name, other, m.Status, ok))
					}
				}
			}
			select {
			case <-w.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *aliveWatch) record(v string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.violation == "" {
		w.violation = v
	}
}

func (w *aliveWatch) finish() string {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.violation
}

// keyringWhere waits until the leader's keyring listing satisfies cond.
func keyringWhere(t *testing.T, c *api.Client, what string, cond func(*api.Keyring) bool) {
	t.Helper()
	// Members learn each other's fingerprints from a metadata broadcast,
	// or failing that from memberlist's push/pull sync every 30 s: the
	// deadline covers one sync, so a broadcast lost on a loaded machine
	// (a CI run under -race missed 15 s) does not fail the test.
	poll.Eventually(t, 45*time.Second, what, func() error {
		kr, _, err := c.Keyring(t.Context(), false, nil)
		if err != nil {
			return err
		}
		return poll.Check(cond(kr), "the keyring is %+v", *kr)
	})
}

func allConverged(n int) func(*api.Keyring) bool {
	return func(kr *api.Keyring) bool {
		converged := 0
		for _, m := range kr.Members {
			if m.Converged && m.Status == "alive" {
				converged++
			}
		}
		return converged == n
	}
}

// TestKeyRotationKeepsClusterConnected: three servers and a worker with
// gossip encryption rotate the key (install, use, remove) through the API
// while every member's view is watched: nobody is ever seen suspect or
// dead. The worker follows the keyring from the API, a write still goes
// through at the end, and a worker that missed the rotation (started with
// the removed key) recovers through the API and rejoins.
func TestKeyRotationKeepsClusterConnected(t *testing.T) {
	k1, k2 := gossipKey(1), gossipKey(2)
	tc := keyCluster(t, 3, k1)
	servers, leader := tc.Servers(), tc.Leader()
	w := startWorker(tc, "w1", []string{leader.Gossip().LocalAddr()}, nil, calmGossip(k1))
	c := tc.Client(leader)
	keyringWhere(t, c, "the seeded keyring on all four members", func(kr *api.Keyring) bool {
		return len(kr.Keys) == 1 && kr.Keys[0].Primary && allConverged(4)(kr)
	})

	observers := map[string]*gossip.Gossip{"w1": w.Gossip()}
	for _, s := range servers {
		observers[s.NodeID()] = s.Gossip()
	}
	poll.Eventually(t, 15*time.Second, "every member to see every other alive", func() error {
		for observer, g := range observers {
			for name := range observers {
				if m, ok := g.Member(name); !ok || m.Status != gossip.StatusAlive {
					return fmt.Errorf("%s sees %s as %q (known %v)", observer, name, m.Status, ok)
				}
			}
		}
		return nil
	})
	watch := watchAlive(observers)
	ctx := ctxTimeout(t, 25*time.Second)
	if err := c.ChangeKeyring(ctx, api.KeyringInstall, base64.StdEncoding.EncodeToString(k2), false); err != nil {
		t.Fatalf("install: %v", err)
	}
	keyringWhere(t, c, "the new key installed everywhere", func(kr *api.Keyring) bool {
		return len(kr.Keys) == 2 && kr.Keys[1].Installed == 4
	})
	if err := c.ChangeKeyring(ctx, api.KeyringUse, base64.StdEncoding.EncodeToString(k2), false); err != nil {
		t.Fatalf("use: %v", err)
	}
	keyringWhere(t, c, "everyone encrypting with the new key", func(kr *api.Keyring) bool {
		return len(kr.Keys) == 2 && kr.Keys[1].PrimaryOn == 4
	})
	if err := c.ChangeKeyring(ctx, api.KeyringRemove, base64.StdEncoding.EncodeToString(k1), false); err != nil {
		t.Fatalf("remove: %v", err)
	}
	keyringWhere(t, c, "the old key gone everywhere", func(kr *api.Keyring) bool {
		return len(kr.Keys) == 1 && allConverged(4)(kr)
	})
	time.Sleep(2 * time.Second) // on purpose: a probe round or two with the final keyring, in which the watch must see nobody suspect
	if v := watch.finish(); v != "" {
		t.Fatalf("a member lost sight of another during the rotation: %s", v)
	}
	for name, g := range observers {
		if got := g.Keyring(); len(got) != 1 || !bytes.Equal(got[0], k2) {
			t.Errorf("%s holds %d keys after the rotation, want only the new one", name, len(got))
		}
	}
	follower := servers[0]
	if follower == leader {
		follower = servers[1]
	}
	if _, err := tc.Client(follower).PutPool(ctx, api.Pool{Name: "after-rotation"}); err != nil {
		t.Fatalf("a write after the rotation: %v", err)
	}

	late := startWorker(tc, "w2", []string{leader.Gossip().LocalAddr()}, []string{leader.HTTPAddr()}, calmGossip(k1))
	poll.Eventually(t, 20*time.Second, "the worker that missed the rotation to rejoin", func() error {
		m, ok := leader.Gossip().Member("w2")
		return poll.Check(ok && m.Status == gossip.StatusAlive, "the leader sees w2 as %q (known %v)", m.Status, ok)
	})
	if got := late.Gossip().Keyring(); len(got) != 1 || !bytes.Equal(got[0], k2) {
		t.Errorf("the late worker holds %d keys", len(got))
	}
}

// keyCluster is n servers on TCP Raft whose gossip is encrypted with key,
// at twice the LAN timeouts.
func keyCluster(t *testing.T, n int, key []byte) *testcluster.Cluster {
	return testcluster.New(t, n, testcluster.TCP(), testcluster.Configure(func(_ int, cfg *agent.Config) {
		cfg.TimeoutScale, cfg.Gossip = 4, calmGossip(key)
	}))
}

func startWorker(c *testcluster.Cluster, id string, join, servers []string, gc gossip.Config) *worker.Worker {
	return c.StartWorker(worker.Config{
		NodeID: id, Inventory: api.NodeSpec{Pool: "p", TotalCapacity: 4},
		Join: join, Servers: servers, Gossip: gc, PollWait: 5 * time.Second,
	})
}

// TestReplicatedKeyringWinsOverEncryptFlag: a server restarted with an
// outdated --encrypt key takes the replicated keyring from Raft.
func TestReplicatedKeyringWinsOverEncryptFlag(t *testing.T) {
	k1, k2 := gossipKey(1), gossipKey(2)
	tc := keyCluster(t, 1, k1)
	s := tc.Servers()[0]
	c := tc.Client(s)
	ctx := ctxTimeout(t, 20*time.Second)
	keyringWhere(t, c, "the seeded keyring", allConverged(1))
	for _, step := range []struct{ op, key string }{
		{api.KeyringInstall, base64.StdEncoding.EncodeToString(k2)},
		{api.KeyringUse, base64.StdEncoding.EncodeToString(k2)},
		{api.KeyringRemove, base64.StdEncoding.EncodeToString(k1)},
	} {
		if err := c.ChangeKeyring(ctx, step.op, step.key, false); err != nil {
			t.Fatalf("%s: %v", step.op, err)
		}
		keyringWhere(t, c, step.op+" applied", allConverged(1))
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	again := tc.Restart(s, func(cfg *agent.Config) {
		cfg.Bootstrap, cfg.BootstrapExpect, cfg.Join = false, 0, nil
		cfg.Gossip = calmGossip(k1) // the outdated key
		// Without the keyring it last applied, which would hand it k2 at
		// once: this test is about the replicated one.
		if err := os.Remove(filepath.Join(cfg.DataDir, "gossip-keyring.json")); err != nil {
			t.Fatal(err)
		}
	})
	poll.Eventually(t, 15*time.Second, "the restarted server to apply the replicated keyring", func() error {
		got := again.Gossip().Keyring()
		return poll.Check(len(got) == 1 && bytes.Equal(got[0], k2), "it holds %d keys", len(got))
	})
	if kr := again.Store().State().Keyring(); kr == nil || !slices.ContainsFunc(kr.Keys, func(k []byte) bool { return bytes.Equal(k, k2) }) {
		t.Fatalf("replicated keyring after restart: %+v", kr)
	}
}

// TestKeyringWatchLeavesFollowersBatching: the keyring watcher runs on
// every server and must not read the state at each committed entry: a read
// commits a follower's open transaction (fsm_open.go), and the follower
// then pays a commit per entry instead of one per 256. Entries that do not
// touch the keyring pile up in a follower's open transaction, one create
// after another, while its watcher runs.
func TestKeyringWatchLeavesFollowersBatching(t *testing.T) {
	tc := keyCluster(t, 3, gossipKey(3))
	leader := tc.Leader()
	c := tc.Client(leader)
	keyringWhere(t, c, "the seeded keyring", func(kr *api.Keyring) bool { return len(kr.Keys) == 1 })
	ctx := ctxTimeout(t, 30*time.Second)
	if _, err := c.PutPool(ctx, testPool("p")); err != nil {
		t.Fatal(err)
	}
	follower := tc.Followers(leader)[0]
	// Each create waits until the follower applied it, so a watcher that
	// reads at every change has had its chance to commit in between.
	const creates = 5
	for i := range creates {
		spec := api.BundleSpec{ID: fmt.Sprintf("b%d", i), Pool: "p",
			Jobs: []api.Job{{Name: "j", Requirements: api.Requirements{Capacity: 1}}}}
		if _, err := c.CreateBundle(ctx, spec); err != nil {
			t.Fatal(err)
		}
		want := leader.Raft().AppliedIndex()
		// The FSM's own index: Raft's moves when it hands the FSM a batch.
		poll.Eventually(t, 10*time.Second, "the follower to apply the create", func() error {
			return poll.Check(follower.FSM().AppliedIndex() >= want, "follower's FSM at %d, leader at %d",
				follower.FSM().AppliedIndex(), want)
		})
	}
	if n := follower.FSM().OpenEntries(); n < creates {
		t.Fatalf("the follower's open transaction holds %d entries after %d creates: something read its state at each one", n, creates)
	}
	if follower.FSM().State().Bundle(fmt.Sprintf("b%d", creates-1)) == nil {
		t.Fatal("the follower's state misses the last create")
	}
}
