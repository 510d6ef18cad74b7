package agent

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/worker"
)

func gossipKey(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

// calmGossip is loopback gossip with probe timings a loaded test machine
// meets without false suspicions, so a suspicion during the test is the
// rotation's doing.
func calmGossip(key []byte) gossip.Config {
	gc := loopbackGossip()
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
	eventually(t, 45*time.Second, what, func() bool {
		kr, _, err := c.Keyring(t.Context(), false, nil)
		return err == nil && cond(kr)
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
	servers := startCluster(t, 3, func(_ int, cfg *Config) { cfg.Gossip = calmGossip(k1) })
	leader := waitLeader(t, servers)
	w := startWorker(t, "w1", []string{leader.gossip.LocalAddr()}, nil, calmGossip(k1))
	c := client(t, leader)
	keyringWhere(t, c, "the seeded keyring on all four members", func(kr *api.Keyring) bool {
		return len(kr.Keys) == 1 && kr.Keys[0].Primary && allConverged(4)(kr)
	})

	observers := map[string]*gossip.Gossip{"w1": w.Gossip()}
	for _, s := range servers {
		observers[s.cfg.NodeID] = s.gossip
	}
	eventually(t, 15*time.Second, "every member to see every other alive", func() bool {
		for _, g := range observers {
			for name := range observers {
				if m, ok := g.Member(name); !ok || m.Status != gossip.StatusAlive {
					return false
				}
			}
		}
		return true
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
	time.Sleep(2 * time.Second) // a probe round or two with the final keyring
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
	if _, err := client(t, follower).PutPool(ctx, api.Pool{Name: "after-rotation"}); err != nil {
		t.Fatalf("a write after the rotation: %v", err)
	}

	late := startWorker(t, "w2", []string{leader.gossip.LocalAddr()}, []string{leader.HTTPAddr()}, calmGossip(k1))
	eventually(t, 20*time.Second, "the worker that missed the rotation to rejoin", func() bool {
		m, ok := leader.gossip.Member("w2")
		return ok && m.Status == gossip.StatusAlive
	})
	if got := late.Gossip().Keyring(); len(got) != 1 || !bytes.Equal(got[0], k2) {
		t.Errorf("the late worker holds %d keys", len(got))
	}
}

func startWorker(t *testing.T, id string, join, servers []string, gc gossip.Config) *worker.Worker {
	t.Helper()
	w, err := worker.New(worker.Config{
		NodeID: id, Inventory: api.NodeSpec{Pool: "p", TotalCapacity: 4},
		Join: join, Servers: servers, Gossip: gc, PollWait: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Kill() })
	return w
}

// TestReplicatedKeyringWinsOverEncryptFlag: a server restarted with an
// outdated --encrypt key takes the replicated keyring from Raft.
func TestReplicatedKeyringWinsOverEncryptFlag(t *testing.T) {
	k1, k2 := gossipKey(1), gossipKey(2)
	servers := startCluster(t, 1, func(_ int, cfg *Config) { cfg.Gossip = calmGossip(k1) })
	s := servers[0]
	c := client(t, s)
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
	cfg := s.cfg
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	cfg.HTTPAddr, cfg.HTTPAdvertise, cfg.RaftAdvertise = "127.0.0.1:0", "", ""
	cfg.Bootstrap, cfg.BootstrapExpect, cfg.Join = false, 0, nil
	cfg.Gossip = calmGossip(k1) // the outdated key
	again := startServer(t, cfg)
	eventually(t, 15*time.Second, "the restarted server to apply the replicated keyring", func() bool {
		got := again.gossip.Keyring()
		return len(got) == 1 && bytes.Equal(got[0], k2)
	})
	if kr := again.store.State().Keyring(); kr == nil || !slices.ContainsFunc(kr.Keys, func(k []byte) bool { return bytes.Equal(k, k2) }) {
		t.Fatalf("replicated keyring after restart: %+v", kr)
	}
}
