package leader

import (
	"slices"
	"sync"

	"github.com/amserver/amserver/fsm"
)

// configTokens holds the configured ACL tokens, which an operator may
// change while the server runs (SIGHUP): Prepare writes what it holds.
type configTokens struct {
	mu     sync.Mutex
	tokens []fsm.ACLToken
}

func (c *configTokens) get() []fsm.ACLToken {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.tokens)
}

// SetConfigTokens replaces the configured ACL tokens; the next Prepare
// (a new term, or the server's reload) writes those the state lacks.
func (l *Leader) SetConfigTokens(tokens []fsm.ACLToken) {
	l.tokens.mu.Lock()
	defer l.tokens.mu.Unlock()
	l.tokens.tokens = slices.Clone(tokens)
}
