// Package workload drives client workloads against an amserver cluster over
// HTTP and records what every request did, with real-time bounds, so that
// package check can judge the history afterwards (linearizability of CAS
// registers, unique creates, placement invariants).
package workload

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/amserver/amserver/api"
)

// Kind names what an operation did.
type Kind string

// Operation kinds.
const (
	KindRead   Kind = "read"
	KindWrite  Kind = "write"
	KindCAS    Kind = "cas"
	KindCreate Kind = "create"
)

// Outcome is what the client knows about an operation's effect.
type Outcome string

// Outcomes. Unknown means the operation may or may not have taken effect
// (and may still take effect later); the checkers must allow both.
const (
	OK      Outcome = "ok"
	Fail    Outcome = "fail"
	Unknown Outcome = "unknown"
)

// Op is one HTTP request of one client process.
type Op struct {
	ID      int    `json:"id"`
	Process int    `json:"process"`
	Server  string `json:"server"`
	Kind    Kind   `json:"kind"`
	// Key is the register's bundle id, or the created bundle's id.
	Key string `json:"key"`
	// Value is the written value (write, cas) or the value read (ok read).
	Value int64 `json:"value"`
	// Expect is, for a cas, the value returned by the read whose
	// modifyIndex is sent.
	Expect int64 `json:"expect,omitempty"`
	// CAS is the modifyIndex sent as ?cas=.
	CAS     uint64  `json:"cas,omitempty"`
	Outcome Outcome `json:"outcome"`
	// Code is the API error code, or CodeTransport / CodeTimeout.
	Code  string `json:"code,omitempty"`
	Error string `json:"error,omitempty"`
	// Index is the X-Amserver-Index of an ok read, or the bundle's
	// modifyIndex after an ok write, cas or create.
	Index uint64 `json:"index,omitempty"`
	// Call and Return are nanoseconds since the history started.
	Call   int64 `json:"call"`
	Return int64 `json:"return"`
}

// Codes recorded for failures that carry no API error code.
const (
	CodeTransport = "transport"
	CodeTimeout   = "timeout"
	// CodeDial is a connection that could not be opened: the request was
	// never sent, so it is a definite failure even for a write.
	CodeDial = "dial"
)

// Sample is one server's view of the whole state at one moment.
type Sample struct {
	Server string `json:"server"`
	Stale  bool   `json:"stale"`
	Call   int64  `json:"call"`
	Return int64  `json:"return"`
	// Index is the highest X-Amserver-Index of the sample's two reads.
	Index   uint64       `json:"index"`
	Nodes   []api.Node   `json:"nodes"`
	Bundles []api.Bundle `json:"bundles"`
	Error   string       `json:"error,omitempty"`
}

// History records operations and samples; it is safe for concurrent use.
type History struct {
	start time.Time // carries the monotonic clock reading
	// seq numbers written values and created ids, so they stay unique even
	// if several Runs share one history.
	seq     atomic.Int64
	mu      sync.Mutex
	ops     []Op
	samples []Sample
}

// NewHistory starts an empty history whose clock starts now.
func NewHistory() *History { return &History{start: time.Now()} }

// Now is the time in nanoseconds since the history started, from the
// monotonic clock so that wall-clock steps cannot reorder operations.
func (h *History) Now() int64 { return int64(time.Since(h.start)) }

// Add records op with the next ID and returns the stored op.
func (h *History) Add(op Op) Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	op.ID = len(h.ops)
	h.ops = append(h.ops, op)
	return op
}

// AddSample records a sample.
func (h *History) AddSample(s Sample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.samples = append(h.samples, s)
}

// Ops returns a copy of the operations ordered by Call.
func (h *History) Ops() []Op {
	h.mu.Lock()
	out := slices.Clone(h.ops)
	h.mu.Unlock()
	slices.SortStableFunc(out, func(a, b Op) int { return cmp.Compare(a.Call, b.Call) })
	return out
}

// Samples returns a copy of the samples ordered by Call. The node and
// bundle lists are shared with the history: treat them as read-only.
func (h *History) Samples() []Sample {
	h.mu.Lock()
	out := slices.Clone(h.samples)
	h.mu.Unlock()
	slices.SortStableFunc(out, func(a, b Sample) int { return cmp.Compare(a.Call, b.Call) })
	return out
}

// SampleSummary is a sample without its (large) node and bundle lists.
type SampleSummary struct {
	Server  string `json:"server"`
	Stale   bool   `json:"stale"`
	Call    int64  `json:"call"`
	Return  int64  `json:"return"`
	Index   uint64 `json:"index"`
	Nodes   int    `json:"nodes"`
	Bundles int    `json:"bundles"`
	Error   string `json:"error,omitempty"`
}

// WriteJSON writes {"ops":[...],"samples":[...]}. Samples are summarized:
// full state lists every 200 ms from every server would dwarf the ops.
func (h *History) WriteJSON(w io.Writer) error {
	samples := h.Samples()
	out := struct {
		Ops     []Op            `json:"ops"`
		Samples []SampleSummary `json:"samples"`
	}{Ops: h.Ops(), Samples: make([]SampleSummary, len(samples))}
	for i, s := range samples {
		out.Samples[i] = SampleSummary{Server: s.Server, Stale: s.Stale, Call: s.Call, Return: s.Return,
			Index: s.Index, Nodes: len(s.Nodes), Bundles: len(s.Bundles), Error: s.Error}
	}
	if out.Ops == nil {
		out.Ops = []Op{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("write history: %w", err)
	}
	return nil
}

// Sleep waits d or until ctx ends; false when ctx ended. Fault schedules
// (the simulation's and the Docker suite's) are timed with it.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
