package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
)

// TestShutdownUnderKeptAliveLoad: clients write through kept-alive
// connections while the server drains and shuts down gracefully. Every
// write is acknowledged, refused at the dial (never sent), or, where a
// connection broke under it after all (a dial still in the listener's
// backlog when it closed), outcomeUnknown; never a bare transport error.
func TestShutdownUnderKeptAliveLoad(t *testing.T) {
	b := newTestBackend("s1")
	s := New(Config{Backend: b})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b.setLeader("http://" + l.Addr().String())
	seedCluster(t, b)
	sctx, stop := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- s.Serve(sctx, l) }()

	var acked atomic.Int64
	var mu sync.Mutex
	var broken []error
	var wg sync.WaitGroup
	for w := range 8 {
		c, err := api.New(l.Addr().String(), api.WithMaxRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			var op *net.OpError
			for i := 0; ; i++ {
				_, err := c.PutPool(t.Context(), api.Pool{Name: fmt.Sprintf("p%d-%d", w, i%8)})
				switch {
				case err == nil:
					acked.Add(1)
				case errors.As(err, &op) && op.Op == "dial":
					return // the listener is closed: never sent
				case api.IsCode(err, api.CodeOutcomeUnknown):
					return // said so, and the client stops as it would to check
				default:
					mu.Lock()
					broken = append(broken, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	poll.Eventually(t, 10*time.Second, "writes to flow", func() error {
		if n := acked.Load(); n < 200 {
			return fmt.Errorf("%d acknowledged", n)
		}
		return nil
	})
	s.Drain()
	drainedAt := acked.Load()
	poll.Eventually(t, 10*time.Second, "writes to flow after the drain", func() error {
		if n := acked.Load() - drainedAt; n < 100 {
			return fmt.Errorf("%d acknowledged", n)
		}
		return nil
	})
	stop()
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
	wg.Wait()
	for _, err := range broken {
		t.Errorf("write broken by the shutdown: %v", err)
	}
}
