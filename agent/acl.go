package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/httpapi"
)

// ACLConfig turns ACLs on (DESIGN §9) and names the tokens that come from
// configuration: at least the bootstrap management token, and possibly
// tokens for workers provisioned with the deployment.
type ACLConfig struct {
	Enabled bool
	Tokens  []ConfigToken
}

// ConfigToken is a token whose secret the configuration holds. The leader
// makes sure each exists in the replicated state when it takes office: such
// tokens are managed by configuration, so deleting one through the API
// lasts only until the next leader; remove it from the configuration too.
type ConfigToken struct {
	Secret      string
	Kind        string
	NodeID      string
	Description string
}

// minConfigSecret mirrors the API's minimum for operator-chosen secrets.
const minConfigSecret = 16

func (c *ACLConfig) validate() error {
	for i, t := range c.Tokens {
		if len(t.Secret) < minConfigSecret {
			return fmt.Errorf("acl token %d: the secret must be at least %d bytes", i+1, minConfigSecret)
		}
		tok := t.fsmToken()
		if err := fsm.ValidateACLToken(&tok); err != nil {
			return fmt.Errorf("acl token %d: %w", i+1, err)
		}
	}
	return nil
}

// fsmToken is the replicated form. The accessor id is derived from the
// secret's hash (not the secret), so every server proposes the same one.
func (t ConfigToken) fsmToken() fsm.ACLToken {
	hash := httpapi.HashSecret(t.Secret)
	sum := sha256.Sum256([]byte("accessor:" + hash))
	desc := t.Description
	if desc == "" {
		desc = "from configuration"
	}
	return fsm.ACLToken{
		AccessorID: "config-" + hex.EncodeToString(sum[:6]), SecretHash: hash,
		Kind: t.Kind, NodeID: t.NodeID, Description: desc,
	}
}

// fsmTokens are the configured tokens in their replicated form, which every
// new leader writes when the state lacks them (leader.Prepare).
func (c *ACLConfig) fsmTokens() []fsm.ACLToken {
	out := make([]fsm.ACLToken, len(c.Tokens))
	for i, t := range c.Tokens {
		out[i] = t.fsmToken()
	}
	return out
}
