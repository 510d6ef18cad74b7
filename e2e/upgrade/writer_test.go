//go:build upgrade

package upgrade

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
)

// writer creates small bundles through every server in turn for as long
// as it runs, and records each create's outcome: acknowledged (must be in
// the final state), refused (the connection was refused, or a 4xx: must
// not be), or unknown (either way).
type writer struct {
	clients []*api.Client // one per server, in turn
	// mu is held for each create; pause takes it so that the servers'
	// digests can be compared at one index.
	mu      sync.Mutex
	acked   []string
	refused []string
	unknown []string
	stop    chan struct{}
	done    chan struct{}
}

func startWriter(t *testing.T, l *layout) *writer {
	w := &writer{stop: make(chan struct{}), done: make(chan struct{})}
	for _, s := range l.servers {
		w.clients = append(w.clients, s.client(t))
	}
	go w.run()
	t.Cleanup(w.halt)
	return w
}

func (w *writer) run() {
	defer close(w.done)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		w.mu.Lock()
		w.create(i)
		w.mu.Unlock()
	}
}

func (w *writer) create(i int) {
	id := fmt.Sprintf("load-%05d", i)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := w.clients[i%len(w.clients)].CreateBundle(ctx, loadSpec(id))
	var ae *api.Error
	switch {
	case err == nil:
		w.acked = append(w.acked, id)
	case errors.Is(err, syscall.ECONNREFUSED), errors.As(err, &ae) && ae.Status < 500:
		w.refused = append(w.refused, id)
	default:
		w.unknown = append(w.unknown, id)
	}
}

// paused runs fn with the creates stopped; a test that fails in fn
// still lets the writer go (its cleanup waits for it).
func (w *writer) paused(fn func() string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fn()
}

func (w *writer) halt() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

func (w *writer) counts() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%d acknowledged, %d refused, %d unknown", len(w.acked), len(w.refused), len(w.unknown))
}

// loadSpec is a resilient bundle small enough that hundreds fit.
func loadSpec(id string) api.BundleSpec {
	return api.BundleSpec{ID: id, Pool: "default", Jobs: []api.Job{{Name: "j",
		Requirements: api.Requirements{Capacity: 0.01}, Launch: api.Launch{Driver: api.DriverNone}}}}
}

// lost lists the acknowledged creates missing from the state, and the
// refused ones present in it.
func (w *writer) lost(t *testing.T, c *api.Client) (missing, phantom []string) {
	t.Helper()
	have := map[string]bool{}
	for b, err := range c.ListBundles(t.Context(), api.BundleFilter{}, api.ListOptions{}, nil) {
		if err != nil {
			t.Fatalf("list bundles: %v", err)
		}
		have[b.ID] = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range w.acked {
		if !have[id] {
			missing = append(missing, id)
		}
	}
	for _, id := range w.refused {
		if have[id] {
			phantom = append(phantom, id)
		}
	}
	return missing, phantom
}

// more waits until n more creates were acknowledged, so that each mixed
// version of the cluster applies a share of the load.
func (w *writer) more(t *testing.T, n int) {
	t.Helper()
	w.mu.Lock()
	want := len(w.acked) + n
	w.mu.Unlock()
	poll.Eventually(t, 60*time.Second, fmt.Sprintf("%d more acknowledged creates", n), func() error {
		w.mu.Lock()
		defer w.mu.Unlock()
		return poll.Check(len(w.acked) >= want, "%d of %d acknowledged", len(w.acked), want)
	})
}
