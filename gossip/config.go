package gossip

import (
	"errors"
	"fmt"
	"log"
	"log/slog"
	"math"
	"time"

	"github.com/hashicorp/memberlist"
)

// DefaultPort is amserver's gossip port (TCP and UDP).
const DefaultPort = 7072

// Config configures a Gossip member. Zero durations and counts fall back to
// DefaultConfig's values.
type Config struct {
	NodeName      string
	BindAddr      string
	BindPort      int // 0 picks a free port (see Gossip.LocalAddr)
	AdvertiseAddr string
	AdvertisePort int

	Meta Meta

	// Failure detection; see DefaultConfig for how they trade speed
	// against false alarms. Every member should use the same values.
	ProbeInterval  time.Duration // each member probes one other per interval
	ProbeTimeout   time.Duration // direct ack wait before indirect probes
	GossipInterval time.Duration
	SuspicionMult  int // suspicion timeout in probe intervals (× log10 N past 10)
	// SuspicionMaxMult caps the suspicion timeout, in suspicion timeouts,
	// while fewer members than expected confirm a suspicion (memberlist's
	// SuspicionMaxTimeoutMult).
	SuspicionMaxMult    int
	RetransmitMult      int
	DeadNodeReclaimTime time.Duration

	// ReconnectInterval is how often one dead or left member is re-joined.
	// memberlist never probes dead nodes, so without this a healed partition
	// stays split.
	ReconnectInterval time.Duration
	// ReapAfter is how long dead and left members stay in Members() (and are
	// retried) before they are forgotten.
	ReapAfter time.Duration

	// SecretKey is an optional AES key, 16/24/32 bytes, that encrypts gossip:
	// the keyring's first key. SetKeyring changes the keyring later.
	SecretKey []byte

	// Transport replaces memberlist's UDP+TCP transport (tests: FaultTransport).
	// With it, BindAddr/BindPort are the transport's business.
	Transport memberlist.Transport
	Logger    *slog.Logger // nil discards
}

// DefaultConfig is tuned for a LAN, where a backup should take over within
// a second of a crash (issue 21: p99 <= 1 s) and no live member is ever
// declared dead (issue 21: 0 false node-down under full load). A crashed
// member is declared dead after
//
//	F                 until someone probes it: each member probes one other
//	                  per ProbeInterval round robin, so with m members
//	                  probing, the first probe comes within ~(N-1)/m
//	                  intervals, ~1 at p99 for 7 members
//	+ ProbeInterval   the failed probe (direct, indirect, TCP) waits this long
//	+ S               the suspicion timeout: SuspicionMult × ProbeInterval ×
//	                  max(1, log10 N) once SuspicionMult−2 other members
//	                  confirmed the suspicion (at once when fewer than that
//	                  many could: a 3-server cluster), up to
//	                  SuspicionMaxMult × that while they have not
//
// Budget (Budget computes it; TestDefaultBudget pins it): with 100 ms × 5,
// S is 500 ms, so a crash is declared dead within ~0.8 s at p99 for up to
// 10 members (2 s at 100). The false-alarm budget is the other side: a
// live member is declared dead only if it answers no direct, indirect or
// TCP probe for ProbeInterval and then cannot refute the suspicion within
// S — a whole-process stall of 600 ms while all the members that probe it
// confirm (they do when the stall is real), 1.6 s while a lone accuser
// suspects it (a lossy path, a slow accuser). Lifeguard helps on both
// sides: a member whose own probes miss their acks because it is slow
// stretches its own probe timeouts (up to 8×) instead of accusing others,
// and memberlist's refutation bumps the incarnation as soon as the accused
// member hears of it, which GossipInterval (50 ms) makes quick. Go's
// collector stops the world for well under a millisecond, so 600 ms is a
// stall only an overloaded host or a paused VM produces; where hosts stall
// for that long, raise SuspicionMult (each step adds one ProbeInterval to
// both budgets) rather than ProbeInterval.
//
// Measured (bench suite "failover", 3 servers + 4 workers on loopback, 20
// trials, 2-core host; docs/performance.md "Failover"): kill → dead at the
// leader p50 0.57 s, p99 0.72 s, backup promoted p50 0.57 s, p99 0.73 s
// (with 200 ms × 7 max ×3: dead p50 1.86 s, p99 2.16 s, promoted p99
// 2.17 s). On a host loaded by other builds the p99s were 0.9–1.5 s. False
// alarms (make soak-smoke: 2,000 read clients beside the write load): no
// member declared dead in a minute on a quiet host (29 suspicions, all
// refuted); on a saturated one (/v1/health p99 1.3 s) both these and the
// former values declared live members dead, these about three times as
// often. Where hosts stall that long, raise SuspicionMult rather than
// ProbeInterval.
func DefaultConfig() Config {
	return Config{
		BindAddr:            "0.0.0.0",
		BindPort:            DefaultPort,
		ProbeInterval:       100 * time.Millisecond,
		ProbeTimeout:        50 * time.Millisecond,
		GossipInterval:      50 * time.Millisecond,
		SuspicionMult:       4,
		SuspicionMaxMult:    2,
		RetransmitMult:      4,
		DeadNodeReclaimTime: 10 * time.Second, // lets a restarted node return at a new address
		ReconnectInterval:   5 * time.Second,
		ReapAfter:           24 * time.Hour,
	}
}

// withDefaults fills zero values from DefaultConfig and validates the rest.
func (c Config) withDefaults() (Config, error) {
	d := DefaultConfig()
	fillDur := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	fillDur(&c.ProbeInterval, d.ProbeInterval)
	fillDur(&c.ProbeTimeout, d.ProbeTimeout)
	fillDur(&c.GossipInterval, d.GossipInterval)
	fillDur(&c.DeadNodeReclaimTime, d.DeadNodeReclaimTime)
	fillDur(&c.ReconnectInterval, d.ReconnectInterval)
	fillDur(&c.ReapAfter, d.ReapAfter)
	if c.SuspicionMult <= 0 {
		c.SuspicionMult = d.SuspicionMult
	}
	if c.SuspicionMaxMult <= 0 {
		c.SuspicionMaxMult = d.SuspicionMaxMult
	}
	if c.RetransmitMult <= 0 {
		c.RetransmitMult = d.RetransmitMult
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Meta.Version == 0 {
		c.Meta.Version = ProtocolVersion
	}
	c.Meta.Leaving = false

	if c.NodeName == "" {
		return c, errors.New("gossip: NodeName is required")
	}
	if c.ProbeTimeout >= c.ProbeInterval {
		return c, fmt.Errorf("gossip: ProbeTimeout %s must be below ProbeInterval %s", c.ProbeTimeout, c.ProbeInterval)
	}
	switch len(c.SecretKey) {
	case 0, 16, 24, 32:
	default:
		return c, fmt.Errorf("gossip: SecretKey must be 16, 24 or 32 bytes, got %d", len(c.SecretKey))
	}
	return c, nil
}

// memberlistConfig maps c onto memberlist's LAN config.
func (c Config) memberlistConfig(h *hooks, logger *log.Logger) *memberlist.Config {
	mc := memberlist.DefaultLANConfig()
	mc.Name = c.NodeName
	mc.BindAddr = c.BindAddr
	mc.BindPort = c.BindPort
	mc.AdvertiseAddr = c.AdvertiseAddr
	mc.AdvertisePort = c.AdvertisePort
	mc.ProbeInterval = c.ProbeInterval
	mc.ProbeTimeout = c.ProbeTimeout
	mc.GossipInterval = c.GossipInterval
	mc.SuspicionMult = c.SuspicionMult
	mc.SuspicionMaxTimeoutMult = c.SuspicionMaxMult
	mc.RetransmitMult = c.RetransmitMult
	mc.DeadNodeReclaimTime = c.DeadNodeReclaimTime
	mc.Transport = c.Transport
	// Compression cost a new LZW writer per message, probes included: 4 %
	// of the write suite's allocations (issue 19). Probes and gossip are a
	// few hundred bytes; what it did shrink is the periodic push/pull of
	// the member table (about a KiB a member, every 30 s or more on large
	// clusters), which a LAN carries uncompressed. Peers still read
	// compressed messages from members that send them.
	mc.EnableCompression = false
	mc.Delegate = h
	mc.Events = h
	mc.Alive = h
	mc.Ping = h
	mc.LogOutput = nil // memberlist rejects LogOutput and Logger together
	mc.Logger = logger
	return mc
}

// Budget is what a Config promises a cluster of Members members, by
// memberlist's own formulas (suspicionTimeout, suspectNode).
type Budget struct {
	// Confirmations is how many other members must confirm a suspicion
	// before the short timeout applies (0: it applies at once).
	Confirmations int
	// Suspicion is the timeout once confirmed; SuspicionMax without.
	Suspicion, SuspicionMax time.Duration
	// Detect is a crash's time to dead with the first probe one interval
	// away: ProbeInterval (first probe) + ProbeInterval (its failure) + S.
	Detect time.Duration
	// Tolerance is the longest a live member may answer nothing and still
	// not be declared dead when every prober confirms: ProbeInterval + S.
	// LoneTolerance is the same with a single accuser.
	Tolerance, LoneTolerance time.Duration
}

// Budget computes c's detection and false-alarm budget for n members.
// Zero fields of c take DefaultConfig's values.
func (c Config) Budget(n int) Budget {
	d := DefaultConfig()
	if c.ProbeInterval <= 0 {
		c.ProbeInterval = d.ProbeInterval
	}
	if c.SuspicionMult <= 0 {
		c.SuspicionMult = d.SuspicionMult
	}
	if c.SuspicionMaxMult <= 0 {
		c.SuspicionMaxMult = d.SuspicionMaxMult
	}
	scale := max(1, math.Log10(float64(max(n, 1))))
	s := time.Duration(float64(c.SuspicionMult) * scale * float64(c.ProbeInterval))
	k := c.SuspicionMult - 2
	if n-2 < k {
		k = 0 // memberlist expects no confirmations it cannot get
	}
	b := Budget{Confirmations: k, Suspicion: s, SuspicionMax: time.Duration(c.SuspicionMaxMult) * s}
	if k == 0 {
		b.SuspicionMax = s
	}
	b.Detect = 2*c.ProbeInterval + s
	b.Tolerance = c.ProbeInterval + s
	b.LoneTolerance = c.ProbeInterval + b.SuspicionMax
	return b
}
