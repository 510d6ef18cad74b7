package workload

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/amserver/amserver/api"
)

// Config describes a workload.
type Config struct {
	// ClientOptions are added to every API client's (an ACL token, TLS);
	// retries stay off.
	ClientOptions []api.Option
	// Servers are the HTTP addresses of the servers ("127.0.0.1:7070" or
	// "http://..."). Client i talks only to Servers[i%len], so clients
	// also hit minority-side servers during a partition.
	Servers []string
	// Clients is the number of concurrent client processes (default
	// 2*len(Servers)).
	Clients int
	// Keys is the number of CAS registers (default 3).
	Keys int
	// Pool is where registers and created bundles go (default "e2e");
	// Setup creates it when missing.
	Pool string
	Seed int64
	// OpTimeout bounds each request (default 2 s).
	OpTimeout time.Duration
	// Think is the pause between one client's operations (default 10 ms).
	Think time.Duration
	// CreateCapacity is the capacity of a created bundle's single job
	// (default 0.05).
	CreateCapacity float64
	// MaxCreates caps the creates attempted in total (default 100), which
	// keeps placement feasible for the whole run.
	MaxCreates int
	// Backup makes created bundles ask for a backup replica on another
	// node (resilience sameNode "forbid").
	Backup bool
	// SampleEvery is the sampler's period (default 200 ms).
	SampleEvery time.Duration
}

// DefaultPool is the pool used when Config.Pool is empty.
const DefaultPool = "e2e"

// RegisterCapacity is the capacity of a register's single job: tiny, so
// registers never crowd out created bundles.
const RegisterCapacity = 0.01

func (c Config) withDefaults() (Config, error) {
	if len(c.Servers) == 0 {
		return c, errors.New("workload: no servers configured")
	}
	if c.Clients <= 0 {
		c.Clients = 2 * len(c.Servers)
	}
	if c.Keys <= 0 {
		c.Keys = 3
	}
	if c.Pool == "" {
		c.Pool = DefaultPool
	}
	if c.OpTimeout <= 0 {
		c.OpTimeout = 2 * time.Second
	}
	if c.Think < 0 {
		c.Think = 0
	} else if c.Think == 0 {
		c.Think = 10 * time.Millisecond
	}
	if c.CreateCapacity <= 0 {
		c.CreateCapacity = 0.05
	}
	if c.MaxCreates <= 0 {
		c.MaxCreates = 100
	}
	if c.SampleEvery <= 0 {
		c.SampleEvery = 200 * time.Millisecond
	}
	return c, nil
}

// clients opens one API client per server, with retries off so that one
// Op is exactly one HTTP request.
func (c Config) clients() ([]*api.Client, error) {
	out := make([]*api.Client, len(c.Servers))
	for i, s := range c.Servers {
		cl, err := api.New(s, append([]api.Option{api.WithMaxRetries(0)}, c.ClientOptions...)...)
		if err != nil {
			return nil, fmt.Errorf("workload: server %d: %w", i, err)
		}
		out[i] = cl
	}
	return out, nil
}

// RegisterKey names register i.
func RegisterKey(i int) string { return "reg-" + strconv.Itoa(i) }

// RegisterSpec is register key's bundle holding value v in tags["v"].
// Writes replace the whole spec, so every write sends this shape.
func RegisterSpec(pool, key string, v int64) api.BundleSpec {
	return api.BundleSpec{
		ID: key, Pool: pool,
		Jobs: []api.Job{{
			Name: "r", Requirements: api.Requirements{Capacity: RegisterCapacity},
			Launch: api.Launch{Driver: api.DriverNone},
		}},
		Tags: map[string]string{"v": strconv.FormatInt(v, 10)},
	}
}

// RegisterValue reads a register's value from a bundle's tags.
func RegisterValue(b *api.Bundle) (int64, error) {
	raw, ok := b.Tags["v"]
	if !ok {
		return 0, fmt.Errorf("bundle %s has no tag v", b.ID)
	}
	v, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bundle %s tag v: %w", b.ID, err)
	}
	return v, nil
}
