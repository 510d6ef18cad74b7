package httpapi

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
)

// Serve shuts down when its context ends, answering blocked queries rather
// than waiting out their five minutes.
func TestServeShutsDownGracefully(t *testing.T) {
	b := newTestBackend("s1")
	s := New(Config{Backend: b})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(sctx, l) }()
	c, err := api.New(l.Addr().String(), api.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	_, meta, err := c.Pools(ctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	blocked := make(chan error, 1)
	before := b.watches.Load()
	go func() {
		_, _, err := c.Pools(ctx(t), &api.QueryOptions{Index: meta.Index, Wait: 5 * time.Minute})
		blocked <- err
	}()
	b.waitWatching(t, before)
	stop()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve = %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Serve did not return")
	}
	if err := <-blocked; err != nil {
		t.Fatalf("blocked query ended with %v, want an answer", err)
	}
	if _, _, err := c.Pools(ctx(t), nil); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("server still answering after shutdown: %v", err)
	}
}

func TestListenAndServeBadAddress(t *testing.T) {
	s := New(Config{Backend: newTestBackend("s1")})
	if err := s.ListenAndServe(context.Background(), "256.0.0.1:http"); err == nil {
		t.Fatal("listening on a bad address succeeded")
	}
}
