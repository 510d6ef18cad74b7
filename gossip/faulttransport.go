package gossip

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// ErrBlocked is the cause of a dial refused by a FaultTransport.
var ErrBlocked = errors.New("gossip: link blocked by fault injection")

// FaultTransport wraps a memberlist transport and drops traffic to and from
// blocked peers, to simulate partitions in in-process clusters.
//
// Outgoing packets to a blocked address vanish, dials to it fail, and
// incoming packets from it are discarded. Incoming streams cannot be
// attributed (they come from an ephemeral port), so cut a link on both ends
// — Partition does that — or a peer's TCP fallback probe will still get
// through.
type FaultTransport struct {
	inner     memberlist.NodeAwareTransport
	packetCh  chan *memberlist.Packet
	done      chan struct{} // closed when Shutdown starts: deliver no more
	innerDown chan struct{} // closed when the inner transport has shut down
	stop      sync.Once
	stopped   sync.Once
	wg        sync.WaitGroup

	mu      sync.RWMutex
	blocked map[string]struct{}
	addr    string // advertised address, known once memberlist has started
}

var _ memberlist.NodeAwareTransport = (*FaultTransport)(nil)

// NewFaultTransport wraps inner (typically a *memberlist.NetTransport).
func NewFaultTransport(inner memberlist.Transport) *FaultTransport {
	na, ok := inner.(memberlist.NodeAwareTransport)
	if !ok {
		na = plainTransport{inner}
	}
	t := &FaultTransport{
		inner:     na,
		packetCh:  make(chan *memberlist.Packet),
		done:      make(chan struct{}),
		innerDown: make(chan struct{}),
		blocked:   make(map[string]struct{}),
	}
	t.wg.Add(1)
	go t.forward()
	return t
}

// NewNetFaultTransport binds a real UDP+TCP transport on bindAddr with a free
// port (retrying, since the UDP port may be taken) and wraps it.
func NewNetFaultTransport(bindAddr string, logger *slog.Logger) (*FaultTransport, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var err error
	for range 10 {
		var nt *memberlist.NetTransport
		nt, err = memberlist.NewNetTransport(&memberlist.NetTransportConfig{
			BindAddrs: []string{bindAddr},
			Logger:    newStdLogger(logger, nil),
		})
		if err == nil {
			return NewFaultTransport(nt), nil
		}
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	return nil, fmt.Errorf("gossip: fault transport on %s: %w", bindAddr, err)
}

// Block drops all traffic with the given peer addresses (host:port).
func (t *FaultTransport) Block(addrs ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, a := range addrs {
		t.blocked[normAddr(a)] = struct{}{}
	}
}

// Unblock restores traffic with the given peer addresses.
func (t *FaultTransport) Unblock(addrs ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, a := range addrs {
		delete(t.blocked, normAddr(a))
	}
}

// UnblockAll restores traffic with every peer.
func (t *FaultTransport) UnblockAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.blocked)
}

// Addr is the address memberlist advertises through this transport, or ""
// before memberlist has started.
func (t *FaultTransport) Addr() string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.addr
}

func (t *FaultTransport) isBlocked(addr string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	_, ok := t.blocked[normAddr(addr)]
	return ok
}

// Partition cuts every link between side a and side b, in both directions.
// The transports must be in use by a started member (Addr known).
func Partition(a, b []*FaultTransport) {
	for _, x := range a {
		for _, y := range b {
			x.Block(y.Addr())
			y.Block(x.Addr())
		}
	}
}

// Heal undoes every block on the given transports.
func Heal(ts ...*FaultTransport) {
	for _, t := range ts {
		t.UnblockAll()
	}
}

// FinalAdvertiseAddr implements memberlist.Transport and remembers the result.
func (t *FaultTransport) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	addr, p, err := t.inner.FinalAdvertiseAddr(ip, port)
	if err == nil {
		t.mu.Lock()
		t.addr = net.JoinHostPort(addr.String(), fmt.Sprint(p))
		t.mu.Unlock()
	}
	return addr, p, err
}

// WriteTo implements memberlist.Transport; blocked packets vanish silently,
// as they would on a real network.
func (t *FaultTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	if t.isBlocked(addr) {
		return time.Now(), nil
	}
	return t.inner.WriteTo(b, addr)
}

// WriteToAddress implements memberlist.NodeAwareTransport.
func (t *FaultTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	if t.isBlocked(a.Addr) {
		return time.Now(), nil
	}
	return t.inner.WriteToAddress(b, a)
}

// DialTimeout implements memberlist.Transport.
func (t *FaultTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	if t.isBlocked(addr) {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: ErrBlocked}
	}
	return t.inner.DialTimeout(addr, timeout)
}

// DialAddressTimeout implements memberlist.NodeAwareTransport.
func (t *FaultTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	if t.isBlocked(a.Addr) {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: ErrBlocked}
	}
	return t.inner.DialAddressTimeout(a, timeout)
}

// PacketCh implements memberlist.Transport, minus packets from blocked peers.
func (t *FaultTransport) PacketCh() <-chan *memberlist.Packet { return t.packetCh }

// StreamCh implements memberlist.Transport (see the type comment on streams).
func (t *FaultTransport) StreamCh() <-chan net.Conn { return t.inner.StreamCh() }

// Shutdown implements memberlist.Transport. The inner transport's listeners
// hand over packets until its Shutdown returns (memberlist's NetTransport
// waits for them, and its UDP listener's send blocks), so forward keeps
// draining them until then, and only then exits.
func (t *FaultTransport) Shutdown() error {
	t.stop.Do(func() { close(t.done) })
	err := t.inner.Shutdown()
	t.stopped.Do(func() { close(t.innerDown) })
	t.wg.Wait()
	return err
}

// forward filters the inner packet channel into ours; once Shutdown has
// begun it drops what arrives instead.
func (t *FaultTransport) forward() {
	defer t.wg.Done()
	in := t.inner.PacketCh()
	for {
		var p *memberlist.Packet
		var ok bool
		select {
		case p, ok = <-in:
			if !ok {
				return
			}
		case <-t.innerDown:
			return
		}
		if p == nil || (p.From != nil && t.isBlocked(p.From.String())) {
			continue
		}
		select {
		case t.packetCh <- p:
		case <-t.done:
		}
	}
}

// normAddr canonicalises host:port so that "::ffff:127.0.0.1:7" and
// "127.0.0.1:7" match; non-IP hosts are kept verbatim.
func normAddr(s string) string {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return s
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()).String()
}

// plainTransport adapts a Transport that lacks the node-aware methods, the
// same way memberlist itself does.
type plainTransport struct{ memberlist.Transport }

func (p plainTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	return p.WriteTo(b, a.Addr)
}

func (p plainTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	return p.DialTimeout(a.Addr, timeout)
}
