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

	ProbeInterval       time.Duration
	ProbeTimeout        time.Duration
	GossipInterval      time.Duration
	SuspicionMult       int
	RetransmitMult      int
	DeadNodeReclaimTime time.Duration

	// ReconnectInterval is how often one dead (not left) member is re-joined.
	// memberlist never probes dead nodes, so without this a healed partition
	// stays split.
	ReconnectInterval time.Duration
	// ReapAfter is how long dead and left members stay in Members() (and are
	// retried) before they are forgotten.
	ReapAfter time.Duration

	SecretKey []byte // optional AES key, 16/24/32 bytes; passed to memberlist

	// Transport replaces memberlist's UDP+TCP transport (tests: FaultTransport).
	// With it, BindAddr/BindPort are the transport's business.
	Transport memberlist.Transport
	Logger    *slog.Logger // nil discards
}

// DefaultConfig is tuned for a LAN: a dead node is declared in about
// ProbeInterval + ProbeTimeout + SuspicionMult×max(1,log10 N)×ProbeInterval,
// i.e. ~2–3 s on a small cluster (memberlist's LAN defaults give ~5–6 s).
func DefaultConfig() Config {
	return Config{
		BindAddr:            "0.0.0.0",
		BindPort:            DefaultPort,
		ProbeInterval:       500 * time.Millisecond,
		ProbeTimeout:        200 * time.Millisecond,
		GossipInterval:      100 * time.Millisecond,
		SuspicionMult:       3,
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
	mc.RetransmitMult = c.RetransmitMult
	mc.DeadNodeReclaimTime = c.DeadNodeReclaimTime
	mc.SecretKey = c.SecretKey
	mc.Transport = c.Transport
	mc.Delegate = h
	mc.Events = h
	mc.Alive = h
	mc.Ping = h
	mc.LogOutput = nil // memberlist rejects LogOutput and Logger together
	mc.Logger = logger
	return mc
}
