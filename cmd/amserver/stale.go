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
		once.Do(func() {
			_, _ = fmt.Fprintf(w, "warning: answered from the server's own state (--stale), and it %s: this may be out of date (state index %d)\n", why, m.Index)
		})
	}
}
