package sim

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// errUnreachable is what a dial across a cut link or to a dead member gets.
var errUnreachable = errors.New("sim: gossip peer unreachable")

// gossipNet is an in-memory network for memberlist. memberlist ships a
// MockNetwork, but it is not safe for members created while others run and
// it blocks forever sending to a member that stopped; a crash-and-restart
// simulation needs both, plus cut links, so this is a small fault-aware
// equivalent: packets to a cut or dead peer vanish, dials fail.
type gossipNet struct {
	mu      sync.Mutex
	ends    map[string]*gossipEnd // by address
	blocked map[[2]string]bool    // from → to address
}

func newGossipNet() *gossipNet {
	return &gossipNet{ends: map[string]*gossipEnd{}, blocked: map[[2]string]bool{}}
}

// attach creates the member at addr, replacing a stopped one (a restart
// keeps its address, as a restarted host keeps its IP).
func (n *gossipNet) attach(addr string) *gossipEnd {
	e := &gossipEnd{
		net: n, addr: addr,
		packets: make(chan *memberlist.Packet, 1024),
		streams: make(chan net.Conn, 64),
		done:    make(chan struct{}),
	}
	n.mu.Lock()
	n.ends[addr] = e
	n.mu.Unlock()
	return e
}

// setCuts replaces the set of cut links (from → to address, one way).
func (n *gossipNet) setCuts(cuts [][2]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.blocked = map[[2]string]bool{}
	for _, c := range cuts {
		n.blocked[c] = true
	}
}

// route returns the live end at to, if from may reach it.
func (n *gossipNet) route(from, to string) (*gossipEnd, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.blocked[[2]string{from, to}] {
		return nil, false
	}
	e, ok := n.ends[to]
	if !ok || e.isDone() {
		return nil, false
	}
	return e, true
}

// gossipEnd is one member's transport on a gossipNet.
type gossipEnd struct {
	net     *gossipNet
	addr    string
	packets chan *memberlist.Packet
	streams chan net.Conn
	done    chan struct{}
	once    sync.Once
}

var _ memberlist.NodeAwareTransport = (*gossipEnd)(nil)

func (e *gossipEnd) isDone() bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}

// FinalAdvertiseAddr advertises the simulated address.
func (e *gossipEnd) FinalAdvertiseAddr(string, int) (net.IP, int, error) {
	host, portStr, err := net.SplitHostPort(e.addr)
	if err != nil {
		return nil, 0, fmt.Errorf("sim gossip address %q: %w", e.addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, 0, fmt.Errorf("sim gossip port %q: %w", portStr, err)
	}
	return net.ParseIP(host), port, nil
}

// WriteTo sends a packet; like UDP, a lost packet is not an error.
func (e *gossipEnd) WriteTo(b []byte, addr string) (time.Time, error) {
	return e.WriteToAddress(b, memberlist.Address{Addr: addr})
}

// WriteToAddress sends a packet to a.
func (e *gossipEnd) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	now := time.Now()
	dest, ok := e.net.route(e.addr, a.Addr)
	if !ok {
		return now, nil
	}
	pkt := &memberlist.Packet{Buf: append([]byte(nil), b...), From: simAddr(e.addr), Timestamp: now}
	select {
	case dest.packets <- pkt:
	default: // a full queue drops, as a busy socket would
	}
	return now, nil
}

// PacketCh delivers incoming packets.
func (e *gossipEnd) PacketCh() <-chan *memberlist.Packet { return e.packets }

// DialTimeout opens a stream to addr.
func (e *gossipEnd) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return e.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

// DialAddressTimeout opens a stream to a, failing across a cut link.
func (e *gossipEnd) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	dest, ok := e.net.route(e.addr, a.Addr)
	if !ok {
		return nil, fmt.Errorf("dial %s: %w", a.Addr, errUnreachable)
	}
	if _, back := e.net.route(a.Addr, e.addr); !back {
		return nil, fmt.Errorf("dial %s: no way back: %w", a.Addr, errUnreachable)
	}
	local, remote := net.Pipe()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case dest.streams <- remote:
		return local, nil
	case <-dest.done:
	case <-t.C:
	}
	_ = local.Close()
	_ = remote.Close()
	return nil, fmt.Errorf("dial %s: %w", a.Addr, errUnreachable)
}

// StreamCh delivers incoming streams.
func (e *gossipEnd) StreamCh() <-chan net.Conn { return e.streams }

// Shutdown stops the member: traffic to it vanishes from now on.
func (e *gossipEnd) Shutdown() error {
	e.once.Do(func() { close(e.done) })
	return nil
}

// simAddr is a net.Addr for a simulated address.
type simAddr string

func (a simAddr) Network() string { return "sim" }
func (a simAddr) String() string  { return string(a) }
