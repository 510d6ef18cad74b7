package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/api"
)

// envACLManagement carries the bootstrap management secret, so it need not
// appear on a command line (visible to every local user in ps).
const envACLManagement = "AMSERVER_ACL_MANAGEMENT_TOKEN"

// aclFlags are a server's ACL settings (DESIGN §9).
type aclFlags struct {
	enabled    bool
	management string
	tokens     []string
}

func (f *aclFlags) register(fl *pflag.FlagSet) {
	fl.BoolVar(&f.enabled, "acl-enabled", false, "server: enforce ACL tokens on the HTTP API (deny by default)")
	fl.StringVar(&f.management, "acl-management-token", "", "server: bootstrap management token secret, at least 16 bytes (env "+envACLManagement+")")
	fl.StringArrayVar(&f.tokens, "acl-token", nil, "server: a token from configuration, KIND:SECRET or worker:NODE-ID:SECRET (repeatable)")
}

// config turns the flags into the agent's ACL configuration; every server
// should carry the same tokens.
func (f *aclFlags) config() (agent.ACLConfig, error) {
	cfg := agent.ACLConfig{Enabled: f.enabled}
	mgmt := f.management // AMSERVER_ACL_MANAGEMENT_TOKEN sets it too (applyEnv)
	if mgmt != "" {
		cfg.Tokens = append(cfg.Tokens, agent.ConfigToken{Secret: mgmt, Kind: api.ACLManagement, Description: "bootstrap management token"})
	}
	for _, spec := range f.tokens {
		tok, err := parseConfigToken(spec)
		if err != nil {
			return agent.ACLConfig{}, fmt.Errorf("--acl-token: %w", err)
		}
		cfg.Tokens = append(cfg.Tokens, tok)
	}
	if cfg.Enabled && mgmt == "" {
		return agent.ACLConfig{}, fmt.Errorf("--acl-enabled needs a management token: --acl-management-token or %s", envACLManagement)
	}
	return cfg, nil
}

// parseConfigToken reads KIND:SECRET or worker:NODE-ID:SECRET; the secret
// is last so that it may itself contain colons.
func parseConfigToken(spec string) (agent.ConfigToken, error) {
	kind, rest, ok := strings.Cut(spec, ":")
	if !ok || rest == "" {
		return agent.ConfigToken{}, fmt.Errorf("%q: want KIND:SECRET or worker:NODE-ID:SECRET", redact(spec))
	}
	tok := agent.ConfigToken{Kind: kind, Secret: rest}
	if kind == api.ACLWorker {
		node, secret, ok := strings.Cut(rest, ":")
		if !ok || node == "" || secret == "" {
			return agent.ConfigToken{}, fmt.Errorf("%q: a worker token is worker:NODE-ID:SECRET", redact(spec))
		}
		tok.NodeID, tok.Secret = node, secret
	}
	return tok, nil
}

// redact keeps a secret out of error messages and logs.
func redact(spec string) string {
	if i := strings.LastIndexByte(spec, ':'); i >= 0 {
		return spec[:i+1] + "…"
	}
	return "…"
}
