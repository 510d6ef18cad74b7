// Package gossip wraps hashicorp/memberlist: node metadata (role, addresses,
// failure domain), the local membership view with suspect/dead/left states,
// and a coalescing event stream.
//
// memberlist v0.5.4 exposes neither suspicion nor the dead/left distinction
// (Node.State is shadowed inside memberlist and always reads alive), so this
// package derives them: suspicion from memberlist's own probe-failure log
// line, recovery from direct probe acks, and "left" from a Leaving flag that
// Leave gossips in the metadata before memberlist's leave message.
package gossip

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
)

// ErrShutdown is returned by calls made after Shutdown.
var ErrShutdown = errors.New("gossip: shut down")

// eventBuffer is the Events channel capacity; beyond it events coalesce.
const eventBuffer = 64

// Gossip is one member of the gossip pool.
type Gossip struct {
	cfg    Config
	logger *slog.Logger
	ml     *memberlist.Memberlist
	table  *table
	hooks  *hooks
	out    chan Event
	done   chan struct{}
	wg     sync.WaitGroup

	// keyring is memberlist's; keyMu serialises our changes to it, since
	// memberlist's own methods are not safe against concurrent writers.
	keyring *memberlist.Keyring
	keyMu   sync.Mutex

	mu       sync.Mutex // serialises meta changes, Leave and Shutdown
	meta     Meta
	leaving  bool
	shutdown bool
}

// New starts a memberlist member. It does not contact anyone; call Join.
func New(cfg Config) (*Gossip, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	keyring, err := newKeyring(cfg.SecretKey)
	if err != nil {
		return nil, err
	}
	cfg.Meta.Keyring = nil
	if k := keyring.GetPrimaryKey(); k != nil {
		cfg.Meta.Keyring = []string{KeyFingerprint(k)}
	}
	metaBytes, err := EncodeMeta(cfg.Meta)
	if err != nil {
		return nil, fmt.Errorf("gossip: node metadata: %w", err)
	}
	logger := cfg.Logger.With("component", "gossip", "node", cfg.NodeName)
	g := &Gossip{
		cfg:     cfg,
		logger:  logger,
		table:   newTable(cfg.NodeName),
		out:     make(chan Event, eventBuffer),
		done:    make(chan struct{}),
		meta:    cfg.Meta,
		keyring: keyring,
	}
	g.hooks = &hooks{table: g.table, logger: logger, meta: metaBytes}
	// memberlist calls the hooks during Create, so they are ready first.
	mc := cfg.memberlistConfig(g.hooks, newStdLogger(logger, g.hooks.suspectFromLog))
	mc.SecretKey, mc.Keyring = nil, keyring
	g.ml, err = memberlist.Create(mc)
	if err != nil {
		return nil, fmt.Errorf("gossip: start memberlist: %w", err)
	}
	g.wg.Add(2)
	go g.pump()
	go g.maintain()
	return g, nil
}

// Join contacts the given gossip addresses (host:port), retrying with
// backoff until at least one answers or ctx ends. A single attempt may
// outlast ctx by memberlist's TCP timeout, since memberlist takes no context.
func (g *Gossip) Join(ctx context.Context, addrs []string) (int, error) {
	if len(addrs) == 0 {
		return 0, errors.New("gossip: join: no addresses")
	}
	backoff := 100 * time.Millisecond
	warned := ""
	for {
		if g.isShutdown() {
			return 0, ErrShutdown
		}
		n, err := g.ml.Join(addrs)
		if n > 0 {
			if warned != "" {
				g.logger.Info("gossip joined", "addrs", addrs, "members", n)
			}
			return n, nil
		}
		// An agent that cannot join runs on alone: say why, once per
		// distinct reason, where an operator reads (a wrong key retries
		// forever and would otherwise be silent).
		if msg := oneLine(err); msg != warned {
			warned = msg
			g.logger.Warn("gossip join failed, retrying", "addrs", addrs, "err", msg, "fix", joinFix(msg))
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("gossip: join %v: %w (last error: %w)", addrs, ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// oneLine flattens memberlist's multi-line error list ("1 error occurred:\n\t* ...").
func oneLine(err error) string {
	lines := strings.Split(strings.TrimSpace(fmt.Sprint(err)), "\n")
	if len(lines) > 1 && strings.HasSuffix(lines[0], "occurred:") {
		lines = lines[1:]
	}
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(strings.TrimSpace(l), "* ")
	}
	return strings.Join(lines, "; ")
}

// joinFix is what an operator can do about a failed join.
func joinFix(msg string) string {
	if strings.Contains(msg, "decrypt") {
		return "this agent's gossip key (--encrypt) is not in the cluster's keyring: start it with the current key " +
			"(a worker with --servers also fetches the keyring from the API)"
	}
	return "check that the --join addresses are gossip addresses of running members and that every member uses the same --encrypt setting"
}

// Members returns every known member, the local one included, sorted by name.
// Dead and left members stay until Config.ReapAfter.
func (g *Gossip) Members() []Member { return g.table.list() }

// Member returns one member by name.
func (g *Gossip) Member(name string) (Member, bool) { return g.table.get(name) }

// LocalName is this node's gossip name.
func (g *Gossip) LocalName() string { return g.cfg.NodeName }

// LocalAddr is the address peers use to reach this node (host:port), useful
// when BindPort was 0.
func (g *Gossip) LocalAddr() string {
	m, _ := g.table.get(g.cfg.NodeName)
	return m.Address()
}

// NumMembers counts alive and suspect members, the local one included.
func (g *Gossip) NumMembers() int { return g.table.live() }

// Events delivers membership changes; see Event for the coalescing rules.
// The channel is closed by Shutdown.
func (g *Gossip) Events() <-chan Event { return g.out }

// UpdateMeta replaces the local metadata and waits until memberlist has
// broadcast it or ctx ends. Version 0 means ProtocolVersion; Leaving is
// managed by Leave. On a ctx error the new metadata is still in effect and
// keeps propagating.
func (g *Gossip) UpdateMeta(ctx context.Context, m Meta) error {
	g.mu.Lock()
	if g.shutdown {
		g.mu.Unlock()
		return ErrShutdown
	}
	if m.Version == 0 {
		m.Version = ProtocolVersion
	}
	m.Leaving = g.leaving
	m.Keyring = g.meta.Keyring
	b, err := EncodeMeta(m)
	if err != nil {
		g.mu.Unlock()
		return fmt.Errorf("gossip: update metadata: %w", err)
	}
	g.meta = m
	g.hooks.setMeta(b)
	g.mu.Unlock()
	return g.broadcastMeta(ctx)
}

// broadcastMeta re-advertises the local node. memberlist's UpdateNode takes
// a timeout, not a context, so it runs aside with a bounded timeout.
func (g *Gossip) broadcastMeta(ctx context.Context) error {
	timeout := 10 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(dl), time.Millisecond)
	}
	errc := make(chan error, 1)
	go func() { errc <- g.ml.UpdateNode(timeout) }()
	select {
	case err := <-errc:
		if err != nil {
			return fmt.Errorf("gossip: broadcast metadata: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("gossip: broadcast metadata: %w", ctx.Err())
	}
}

// Leave announces a graceful departure: first the Leaving flag in our
// metadata (so peers report "left", not "dead"), then memberlist's leave
// message. It does not stop the member; call Shutdown afterwards. A timeout
// <= 0 means 5 s (memberlist would wait forever).
func (g *Gossip) Leave(timeout time.Duration) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shutdown {
		return ErrShutdown // memberlist panics on leave after shutdown
	}
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	deadline := time.Now().Add(timeout)
	var errs []error
	if !g.leaving {
		g.leaving = true
		m := g.meta
		m.Leaving = true
		// The flag is a fixed-size field, so this cannot outgrow the limit.
		if b, err := EncodeMeta(m); err == nil {
			g.meta = m
			g.hooks.setMeta(b)
			errs = append(errs, g.ml.UpdateNode(max(timeout/2, time.Millisecond)))
		}
	}
	if err := g.ml.Leave(max(time.Until(deadline), time.Millisecond)); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("gossip: leave: %w", err)
	}
	return nil
}

// Shutdown stops the member without announcing anything (peers will see it
// fail), waits for this package's goroutines and closes the Events channel.
// It is idempotent. If a reconnect attempt is dialing an unreachable host it
// waits for memberlist's TCP timeout (10 s), which it cannot interrupt.
func (g *Gossip) Shutdown() error {
	g.mu.Lock()
	if g.shutdown {
		g.mu.Unlock()
		return nil
	}
	g.shutdown = true
	g.mu.Unlock()
	close(g.done)
	err := g.ml.Shutdown()
	g.wg.Wait()
	if err != nil {
		return fmt.Errorf("gossip: shutdown: %w", err)
	}
	return nil
}

func (g *Gossip) isShutdown() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.shutdown
}

// pump moves pending events to the Events channel. Only this goroutine
// blocks on the consumer; memberlist's callbacks only touch the table.
func (g *Gossip) pump() {
	defer g.wg.Done()
	defer close(g.out)
	for {
		ev, ok := g.table.next()
		if !ok {
			select {
			case <-g.table.notify:
				continue
			case <-g.done:
				return
			}
		}
		select {
		case g.out <- ev:
		case <-g.done:
			return
		}
	}
}

// maintain reaps old dead/left members and re-joins one of them per
// interval, which is how a healed partition merges again, and how a member
// that left gracefully and restarted without joining anyone (or whose
// --join names only members that restarted too) is found again.
func (g *Gossip) maintain() {
	defer g.wg.Done()
	tick := time.NewTicker(g.cfg.ReconnectInterval)
	defer tick.Stop()
	for {
		select {
		case <-g.done:
			return
		case <-tick.C:
		}
		addr := g.table.reap(g.cfg.ReapAfter)
		g.mu.Lock()
		skip := g.leaving || g.shutdown
		g.mu.Unlock()
		if addr == "" || skip {
			continue
		}
		if n, err := g.ml.Join([]string{addr}); n > 0 {
			g.logger.Info("gossip reconnected to a dead or left member", "addr", addr)
		} else {
			g.logger.Debug("gossip reconnect failed", "addr", addr, "err", err)
		}
	}
}
