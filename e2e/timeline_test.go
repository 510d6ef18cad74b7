//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/amserver/amserver/e2e/workload"
)

// faultTimeout bounds one Start or Heal. They run detached from the run's
// context: a heal cut short when the workload ends would leave the fault in.
const faultTimeout = 2 * time.Minute

// event is one nemesis action on the history's clock, so a violation's
// operations can be lined up with the fault that was active.
type event struct {
	At    time.Duration `json:"at"` // since the history started
	Took  time.Duration `json:"took"`
	What  string        `json:"what"` // start | heal
	Error string        `json:"error,omitempty"`
}

// timeline records nemesis events; the runner writes it as nemesis.json.
type timeline struct {
	mu     sync.Mutex
	h      *workload.History
	events []event
}

func (tl *timeline) do(ctx context.Context, what string, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), faultTimeout)
	defer cancel()
	at := time.Duration(tl.h.Now())
	err := fn(ctx)
	e := event{At: at, Took: time.Duration(tl.h.Now()) - at, What: what}
	if err != nil {
		e.Error = err.Error()
	}
	tl.mu.Lock()
	tl.events = append(tl.events, e)
	tl.mu.Unlock()
	return err
}

// errors lists the failed events.
func (tl *timeline) errors() []string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var out []string
	for _, e := range tl.events {
		if e.Error != "" {
			out = append(out, fmt.Sprintf("%s at %s: %s", e.What, e.At.Round(time.Millisecond), e.Error))
		}
	}
	return out
}

func (tl *timeline) write(path string) error {
	tl.mu.Lock()
	b, err := json.MarshalIndent(tl.events, "", "  ")
	tl.mu.Unlock()
	if err != nil {
		return fmt.Errorf("nemesis timeline: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("nemesis timeline: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("nemesis timeline: %w", err)
	}
	return nil
}

// cycle runs the nemesis until ctx ends: quiet, start, hold for D/4..D/3,
// heal, and again while a whole hold still fits. The quiet phases let the
// cluster recover so the history has operations on both sides of a fault.
func cycle(ctx context.Context, n Nemesis, d time.Duration, rng *rand.Rand, tl *timeline) {
	quiet := max(d/10, time.Second)
	end, _ := ctx.Deadline()
	for workload.Sleep(ctx, quiet) && time.Until(end) > d/4 {
		// A failed start may have half-applied: heal all the same.
		_ = tl.do(ctx, "start", n.Start)
		hold := d/4 + time.Duration(rng.Int64N(int64(d/3-d/4)+1))
		workload.Sleep(ctx, hold)
		_ = tl.do(ctx, "heal", n.Heal)
	}
}
