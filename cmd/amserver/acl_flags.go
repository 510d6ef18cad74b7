package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
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
	if mgmt != "" && len(mgmt) < minConfigSecret {
		return agent.ACLConfig{}, fmt.Errorf("--acl-management-token (or %s): the secret must be at least %d bytes",
			envACLManagement, minConfigSecret)
	}
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

// minConfigSecret is the servers' minimum for a secret from configuration,
// checked here too so that the flag at fault is named.
const minConfigSecret = 16

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
		if err := fsm.ValidNodeID(node); err != nil {
			return agent.ConfigToken{}, fmt.Errorf("%q: %w", redact(spec), err)
		}
		tok.NodeID, tok.Secret = node, secret
	}
	if len(tok.Secret) < minConfigSecret {
		return agent.ConfigToken{}, fmt.Errorf("%q: the secret must be at least %d bytes", redact(spec), minConfigSecret)
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

// aclFlagNames are the flags a SIGHUP reload re-reads from --config.
var aclFlagNames = []string{"acl-enabled", "acl-management-token", "acl-token"}

// reloadACL rebuilds the ACL configuration as a start would now: values
// the command line or environment set stay, the rest come from the config
// file as it reads today (a token removed from the file goes).
func (f *agentFlags) reloadACL() (agent.ACLConfig, error) {
	fs := pflag.NewFlagSet("reload", pflag.ContinueOnError)
	var fresh aclFlags
	fresh.register(fs)
	for _, name := range aclFlagNames {
		if f.fixed[name] {
			fresh.copyFlag(&f.acl, name)
		}
	}
	values, err := readConfigFile(f.config)
	if err != nil {
		return agent.ACLConfig{}, err
	}
	for _, name := range aclFlagNames {
		if v, ok := values[name]; ok && !f.fixed[name] {
			if err := setFlag(fs, fs.Lookup(name), v); err != nil {
				return agent.ACLConfig{}, fmt.Errorf("--config %s: %s: %w", f.config, name, err)
			}
		}
	}
	return fresh.config()
}

// copyFlag takes one flag's value from from.
func (f *aclFlags) copyFlag(from *aclFlags, name string) {
	switch name {
	case "acl-enabled":
		f.enabled = from.enabled
	case "acl-management-token":
		f.management = from.management
	case "acl-token":
		f.tokens = append([]string(nil), from.tokens...)
	}
}
