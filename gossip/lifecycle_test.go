package gossip

import (
	"context"
	"errors"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/internal/poll"
)

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// metaEqual compares metadata treating nil and empty tags alike.
func metaEqual(a, b Meta) bool {
	if len(a.Tags) == 0 && len(b.Tags) == 0 {
		a.Tags, b.Tags = nil, nil
	}
	return reflect.DeepEqual(a, b)
}

func loopbackConfig(name string) Config {
	cfg := DefaultConfig()
	cfg.NodeName = name
	cfg.BindAddr, cfg.BindPort = "127.0.0.1", 0
	cfg.Meta = Meta{Role: RoleWorker, Pool: "p"}
	return cfg
}

func TestNewValidatesConfig(t *testing.T) {
	cases := map[string]func(*Config){
		"no name":       func(c *Config) { c.NodeName = "" },
		"no role":       func(c *Config) { c.Meta.Role = "" },
		"huge meta":     func(c *Config) { c.Meta.Tags = map[string]string{"x": strings.Repeat("y", 600)} },
		"bad key":       func(c *Config) { c.SecretKey = []byte("short") },
		"probe timeout": func(c *Config) { c.ProbeTimeout = time.Second },
	}
	for name, mutate := range cases {
		cfg := loopbackConfig("n1")
		mutate(&cfg)
		if g, err := New(cfg); err == nil {
			_ = g.Shutdown()
			t.Errorf("%s: New succeeded", name)
		}
	}
	cfg := loopbackConfig("n1")
	cfg.Meta.Tags = map[string]string{"x": strings.Repeat("y", 600)}
	if _, err := New(cfg); !errors.Is(err, ErrMetaTooLarge) {
		t.Errorf("huge meta: err = %v, want ErrMetaTooLarge", err)
	}
}

func TestSingleNodeLifecycle(t *testing.T) {
	g, err := New(loopbackConfig("solo"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Shutdown() })
	self, ok := g.Member("solo")
	if !ok || self.Status != StatusAlive || self.Meta.Version != ProtocolVersion || g.NumMembers() != 1 {
		t.Fatalf("self = %+v (ok %v), NumMembers %d", self, ok, g.NumMembers())
	}
	if ev := <-g.Events(); ev.Type != MemberJoin || ev.Member.Name != "solo" {
		t.Fatalf("first event = %+v", ev)
	}

	// Joining an address where nobody listens gives up when ctx ends.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := ln.Addr().String()
	_ = ln.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	if n, err := g.Join(ctx, []string{deadAddr}); n != 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Join(dead) = %d, %v", n, err)
	}
	if _, err := g.Join(t.Context(), nil); err == nil {
		t.Fatal("Join(nil) succeeded")
	}

	if err := g.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := g.Shutdown(); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
	for range g.Events() { // closed by Shutdown
	}
	if err := g.Leave(time.Second); !errors.Is(err, ErrShutdown) {
		t.Fatalf("Leave after Shutdown = %v", err) // memberlist itself would panic
	}
	if err := g.UpdateMeta(t.Context(), Meta{Role: RoleWorker}); !errors.Is(err, ErrShutdown) {
		t.Fatalf("UpdateMeta after Shutdown = %v", err)
	}
	if _, err := g.Join(t.Context(), []string{deadAddr}); !errors.Is(err, ErrShutdown) {
		t.Fatalf("Join after Shutdown = %v", err)
	}
}

func TestEncryptedPoolRejectsWrongKey(t *testing.T) {
	key := []byte("0123456789abcdef")
	start := func(name string, k []byte) *Gossip {
		cfg := loopbackConfig(name)
		cfg.SecretKey = k
		g, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = g.Shutdown() })
		return g
	}
	a, b := start("a", key), start("b", key)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := b.Join(ctx, []string{a.LocalAddr()}); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 10*time.Second, "same-key members see each other", func() error {
		m, _ := a.Member("b")
		return poll.Check(m.Status == StatusAlive, "a sees b as %q", m.Status)
	})

	intruder := start("x", []byte("fedcba9876543210"))
	ctx2, cancel2 := context.WithTimeout(t.Context(), time.Second)
	defer cancel2()
	if n, err := intruder.Join(ctx2, []string{a.LocalAddr()}); err == nil {
		t.Fatalf("join with the wrong key succeeded (%d)", n)
	}
	if _, ok := a.Member("x"); ok {
		t.Fatal("wrong-key member admitted")
	}
}
