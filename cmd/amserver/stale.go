package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/amserver/amserver/api"
)

// staleAfter is how long since a server last heard from its leader before
// a --stale answer is called possibly out of date.
const staleAfter = 5 * time.Second

// emptyState describes a server whose state index is 0. The index header
// is at least 1 (so that a client passing it back blocks), and Raft's index
// 1 is the bootstrap configuration, never a change of the state: a header
// of 1 is this same empty state, which `status` shows as index 0.
const emptyState = "its state is empty: it has applied nothing since it started"

// staleWarning warns once, on stderr, when a --stale read was answered by
// a server that knows no leader or has not heard from it lately. --stale
// is what an operator reaches for during an outage, and a server that just
// restarted without a quorum answers from an empty or old state: an empty
// table with exit 0 read as an empty cluster.
func staleWarning(w io.Writer) func(api.QueryMeta) {
	var once sync.Once
	return func(m api.QueryMeta) {
		why := ""
		switch {
		case !m.KnownLeader:
			why = "knows no leader"
		case m.LastContact > staleAfter:
			why = fmt.Sprintf("last heard from its leader %s ago", m.LastContact.Round(time.Second))
		default:
			return
		}
		state := fmt.Sprintf("state index %d", m.Index)
		if m.Index <= 1 {
			state = emptyState
		}
		once.Do(func() {
			_, _ = fmt.Fprintf(w, "warning: answered from the server's own state (--stale), and it %s: this may be out of date (%s)\n", why, state)
		})
	}
}
