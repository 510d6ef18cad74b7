package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"
)

// memNet is the simulation's HTTP network: listeners and connections in
// memory (net.Pipe), so that a seed runs inside a synctest bubble, where time
// only moves when every goroutine waits. A goroutine blocked on a real
// socket would stop that clock; one blocked on a pipe does not.
//
// Addresses are names, stable for the whole seed: a restarted server listens
// on its old address again, as a restarted host keeps its IP, and a seed
// cannot reach another seed's servers because each has its own memNet.
type memNet struct {
	mu        sync.Mutex
	listeners map[string]*memListener
	conns     map[*memConn]struct{} // every open end, closed when the seed ends
}

func newMemNet() *memNet {
	return &memNet{listeners: map[string]*memListener{}, conns: map[*memConn]struct{}{}}
}

// listen opens addr, replacing a closed listener there.
func (n *memNet) listen(addr string) (*memListener, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if l, ok := n.listeners[addr]; ok && !l.closed() {
		return nil, fmt.Errorf("listen %s: %w", addr, syscall.EADDRINUSE)
	}
	l := &memListener{net: n, addr: simAddr(addr), conns: make(chan net.Conn), done: make(chan struct{})}
	n.listeners[addr] = l
	return l, nil
}

// DialContext connects to the listener at addr, or fails at once as a
// refused connection does when nothing listens there.
func (n *memNet) DialContext(ctx context.Context, _, addr string) (net.Conn, error) {
	n.mu.Lock()
	l, ok := n.listeners[addr]
	n.mu.Unlock()
	if !ok || l.closed() {
		return nil, &net.OpError{Op: "dial", Net: "mem", Addr: simAddr(addr), Err: syscall.ECONNREFUSED}
	}
	client, server := net.Pipe()
	c := n.track(client, simAddr("client"), l.addr, nil)
	s := n.track(server, l.addr, simAddr("client"), l)
	select {
	case l.conns <- s:
		return c, nil
	case <-l.done:
	case <-ctx.Done():
	}
	_ = c.Close()
	_ = s.Close()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return nil, &net.OpError{Op: "dial", Net: "mem", Addr: simAddr(addr), Err: syscall.ECONNREFUSED}
}

func (n *memNet) track(c net.Conn, local, remote net.Addr, l *memListener) *memConn {
	mc := &memConn{Conn: c, net: n, local: local, remote: remote, owner: l}
	n.mu.Lock()
	n.conns[mc] = struct{}{}
	n.mu.Unlock()
	return mc
}

func (n *memNet) forget(c *memConn) {
	n.mu.Lock()
	delete(n.conns, c)
	n.mu.Unlock()
}

// crash closes the listener at addr and every connection it accepted, as
// the death of a process resets its sockets.
func (n *memNet) crash(addr string) {
	n.mu.Lock()
	l := n.listeners[addr]
	var doomed []*memConn
	for c := range n.conns {
		if l != nil && c.owner == l {
			doomed = append(doomed, c)
		}
	}
	n.mu.Unlock()
	if l != nil {
		_ = l.Close()
	}
	for _, c := range doomed {
		_ = c.Close()
	}
}

// closeAll closes every listener and connection: nothing in the bubble may
// stay blocked on a pipe once the seed is over.
func (n *memNet) closeAll() {
	n.mu.Lock()
	ls := make([]*memListener, 0, len(n.listeners))
	for _, l := range n.listeners {
		ls = append(ls, l)
	}
	cs := make([]*memConn, 0, len(n.conns))
	for c := range n.conns {
		cs = append(cs, c)
	}
	n.mu.Unlock()
	for _, l := range ls {
		_ = l.Close()
	}
	for _, c := range cs {
		_ = c.Close()
	}
}

// client is an HTTP client whose every connection goes through the memNet.
func (n *memNet) client() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			DialContext:         n.DialContext,
			MaxIdleConnsPerHost: 32,
			IdleConnTimeout:     5 * time.Second,
		},
		// Redirects are the API client's business; the servers never send one.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// memListener is one address's listener.
type memListener struct {
	net   *memNet
	addr  simAddr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *memListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *memListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *memListener) closed() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

func (l *memListener) Addr() net.Addr { return l.addr }

// memConn is one end of a pipe with the addresses it was dialled between.
type memConn struct {
	net.Conn
	net           *memNet
	local, remote net.Addr
	owner         *memListener // the listener that accepted it; nil on the dialling side
	once          sync.Once
}

func (c *memConn) LocalAddr() net.Addr  { return c.local }
func (c *memConn) RemoteAddr() net.Addr { return c.remote }

func (c *memConn) Close() error {
	var err error
	c.once.Do(func() {
		c.net.forget(c)
		err = c.Conn.Close()
	})
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
