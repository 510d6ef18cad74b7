package sim

import (
	"net"
	"sync"
)

// stableAddr keeps a simulated server's HTTP port for the whole seed. A
// crashed server's port, once released, could be taken by another seed's
// cluster in the same process, and a stale forward to it would then land in
// the wrong cluster. One socket per server, accepted from here and handed
// to whichever incarnation of the server is up, rules that out; while none
// is, a connection is closed at once.
type stableAddr struct {
	ln      net.Listener
	mu      sync.Mutex
	current *handoff
}

func newStableAddr() (*stableAddr, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	a := &stableAddr{ln: ln}
	go a.acceptLoop()
	return a, nil
}

func (a *stableAddr) acceptLoop() {
	for {
		conn, err := a.ln.Accept()
		if err != nil {
			return // closed at the end of the seed
		}
		a.mu.Lock()
		h := a.current
		a.mu.Unlock()
		if h == nil || !h.offer(conn) {
			_ = conn.Close()
		}
	}
}

// listener returns a listener for the next incarnation of the server.
func (a *stableAddr) listener() net.Listener {
	h := &handoff{addr: a.ln.Addr(), conns: make(chan net.Conn), done: make(chan struct{})}
	a.mu.Lock()
	a.current = h
	a.mu.Unlock()
	return h
}

func (a *stableAddr) close() { _ = a.ln.Close() }

// handoff is one server incarnation's view of the stable socket.
type handoff struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (h *handoff) offer(conn net.Conn) bool {
	select {
	case h.conns <- conn:
		return true
	case <-h.done:
		return false
	}
}

func (h *handoff) Accept() (net.Conn, error) {
	select {
	case c := <-h.conns:
		return c, nil
	case <-h.done:
		return nil, net.ErrClosed
	}
}

func (h *handoff) Close() error {
	h.once.Do(func() { close(h.done) })
	return nil
}

func (h *handoff) Addr() net.Addr { return h.addr }
