package leader

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/raftstore"
)

func token(accessor, secret, kind, node string) fsm.ACLToken {
	sum := sha256.Sum256([]byte(secret))
	return fsm.ACLToken{AccessorID: accessor, SecretHash: hex.EncodeToString(sum[:]), Kind: kind, NodeID: node}
}

// TestPrepare: a new leader writes the configured tokens the state lacks
// (stamped with its clock) before serving, and gives leadership away when
// a write fails; a secret another token holds is logged, not fatal.
func TestPrepare(t *testing.T) {
	mgmt := token("mgmt", "s3cret", fsm.ACLManagement, "")
	worker := token("w1", "w0rker", fsm.ACLWorker, "n1")
	tests := []struct {
		name    string
		stored  []fsm.ACLToken
		fail    error
		writes  int
		wantErr error
		logged  int // "refused by the state" errors
	}{
		{"writes missing tokens", nil, nil, 2, nil, 0},
		{"present tokens are not written again", []fsm.ACLToken{mgmt, worker}, nil, 0, nil, 0},
		{"a changed kind is written", []fsm.ACLToken{kind(mgmt, fsm.ACLRead), worker}, nil, 1, nil, 0},
		{"another token holds the secret", []fsm.ACLToken{token("api", "s3cret", fsm.ACLRead, ""), worker}, nil, 1, nil, 1},
		{"not leader", nil, raftstore.ErrNotLeader, 1, raftstore.ErrNotLeader, 0},
		{"outcome unknown", nil, raftstore.ErrOutcomeUnknown, 1, raftstore.ErrOutcomeUnknown, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.ConfigTokens = []fsm.ACLToken{mgmt, worker} })
			for _, tok := range tc.stored {
				e.store.ok(fsm.UpsertACLTokenType, &fsm.UpsertACLTokenRequest{Token: tok})
			}
			if tc.fail != nil {
				e.store.failNext(tc.fail)
			}
			err := e.l.Prepare(e.ctx)
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("Prepare: %v, want %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "mgmt") {
				t.Fatalf("error %q does not name the token", err)
			}
			if got := len(e.store.take()); got != tc.writes {
				t.Fatalf("%d token writes, want %d", got, tc.writes)
			}
			if got := e.logs.Count(slog.LevelError, "configured ACL token refused by the state"); got != tc.logged {
				t.Fatalf("%d errors logged, want %d", got, tc.logged)
			}
			if err != nil || tc.logged > 0 {
				return
			}
			for _, want := range []fsm.ACLToken{mgmt, worker} {
				got := e.store.State().ACLTokenBySecretHash(want.SecretHash)
				if got == nil || got.Kind != want.Kind || got.NodeID != want.NodeID {
					t.Fatalf("token %s is %+v after Prepare", want.AccessorID, got)
				}
			}
		})
	}
}

func kind(tok fsm.ACLToken, k string) fsm.ACLToken {
	tok.Kind = k
	return tok
}

// TestPrepareStampsClock: a written token's creation time is the leader's
// clock.
func TestPrepareStampsClock(t *testing.T) {
	tok := token("mgmt", "s3cret", fsm.ACLManagement, "")
	e := newEnv(t, func(c *Config) { c.ConfigTokens = []fsm.ACLToken{tok} })
	if err := e.l.Prepare(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.store.State().ACLToken("mgmt"); got == nil || got.CreateTime != e.now() {
		t.Fatalf("token %+v, want created at %d", got, e.now())
	}
}
