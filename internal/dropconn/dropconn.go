// Package dropconn is a test HTTP handler that breaks kept-alive
// connections the way a server's graceful shutdown can: it closes a
// connection under the second request sent on it, without an answer, and
// counts the requests it received by method and path.
package dropconn

import (
	"net/http"
	"sync"
)

// Handler answers {} to the first request on each connection and closes
// the connection under the second.
type Handler struct {
	mu    sync.Mutex
	conns map[string]int // remote address → requests seen on that connection
	paths map[string]int // "METHOD /path" → requests received
}

// New returns a Handler that has seen nothing.
func New() *Handler {
	return &Handler{conns: map[string]int{}, paths: map[string]int{}}
}

func (d *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	d.conns[r.RemoteAddr]++
	d.paths[r.Method+" "+r.URL.Path]++
	n := d.conns[r.RemoteAddr]
	d.mu.Unlock()
	if n == 2 {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = conn.Close()
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{}`))
}

// Seen is how many requests "METHOD /path" reached the handler.
func (d *Handler) Seen(key string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.paths[key]
}
