package gossip

import (
	"errors"
	"fmt"
	"log"
	"log/slog"
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

	// ReconnectInterval is how often one dead (not left) member is re-joined.
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
// about two seconds of a crash (issue 7: p99 < 3 s). A crashed member is
// declared dead after
//
//	F                 until someone probes it: each member probes one other
//	                  per ProbeInterval round robin, so ~1 interval on
//	                  average, ~3–5 at p99
//	+ ProbeInterval   the failed probe waits this long for any ack
//	+ S               the suspicion timeout, SuspicionMult × ProbeInterval ×
//	                  max(1, log10 N): 1.4 s up to 10 members, 2.8 s at 100
//
// A live member that cannot answer for ProbeInterval + S (1.6 s here) is
// declared dead as well, and its primaries fail over: that is the false-alarm
// budget (it was 2.0 s with 500 ms × 3; memberlist's LAN defaults give 5 s).
// F does not buy tolerance, so a short ProbeInterval with a larger
// SuspicionMult is faster for the same budget; probes are one small UDP
// packet, so 5 a second per member costs nothing on a LAN. memberlist only
// uses S once SuspicionMult−2 other members confirm the suspicion, and waits
// up to SuspicionMaxMult × S otherwise; 3 (memberlist: 6) bounds that wait
// in small clusters, where the last confirmations come late, while an
// accused member that is alive still has over 4 s to refute.
//
// Measured (bench suite "failover", 3 servers + 4 workers on loopback, 40
// trials): kill → dead at the leader p50 1.8 s, p99 2.2 s; with 500 ms × 3,
// p50 2.4 s, p99 3.2 s. Where hosts stall for seconds, raise SuspicionMult
// rather than ProbeInterval.
func DefaultConfig() Config {
	return Config{
		BindAddr:            "0.0.0.0",
		BindPort:            DefaultPort,
		ProbeInterval:       200 * time.Millisecond,
		ProbeTimeout:        100 * time.Millisecond,
		GossipInterval:      100 * time.Millisecond,
		SuspicionMult:       7,
		SuspicionMaxMult:    3,
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
	mc.Delegate = h
	mc.Events = h
	mc.Alive = h
	mc.Ping = h
	mc.LogOutput = nil // memberlist rejects LogOutput and Logger together
	mc.Logger = logger
	return mc
}
