package sim

import (
	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/api"
)

// Seeds whose number is a multiple of aclEvery run with ACLs on: clients
// use a management token and each worker its own node-bound token, so the
// authorization path (judged where a request is served, after forwarding)
// runs under the same faults as everything else.
const aclEvery = 3

const simManagementSecret = "sim-management-secret"

func workerSecret(id string) string { return "sim-worker-secret-" + id }

// aclConfig is every server's ACL configuration: the management token and
// one token per worker, all from configuration.
func (c *cluster) aclConfig() agent.ACLConfig {
	if !c.acl {
		return agent.ACLConfig{}
	}
	cfg := agent.ACLConfig{Enabled: true, Tokens: []agent.ConfigToken{{Secret: simManagementSecret, Kind: api.ACLManagement}}}
	for _, w := range c.workers {
		cfg.Tokens = append(cfg.Tokens, agent.ConfigToken{Secret: workerSecret(w.id), Kind: api.ACLWorker, NodeID: w.id})
	}
	return cfg
}

// clientOptions are what every harness client sends: retries off (one Op
// is one request) and the management token when ACLs are on.
func (c *cluster) clientOptions() []api.Option {
	opts := []api.Option{api.WithMaxRetries(0), api.WithHTTPClient(c.hc)}
	if c.acl {
		opts = append(opts, api.WithToken(simManagementSecret))
	}
	return opts
}

func (c *cluster) client(addr string) (*api.Client, error) {
	return api.New(addr, c.clientOptions()...)
}
