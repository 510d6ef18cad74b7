package fsm

import (
	"errors"
	"strings"
	"testing"
)

var (
	hashA = strings.Repeat("a", 64)
	hashB = strings.Repeat("b", 64)
)

func TestACLTokenCommands(t *testing.T) {
	cases := []struct {
		name string
		typ  MessageType
		body any
		want error // nil: applies
	}{
		{"management", UpsertACLTokenType, UpsertACLTokenRequest{Token: ACLToken{AccessorID: "m", SecretHash: hashA, Kind: ACLManagement}}, nil},
		{"worker", UpsertACLTokenType, UpsertACLTokenRequest{Token: ACLToken{AccessorID: "w", SecretHash: hashB, Kind: ACLWorker, NodeID: "n1"}}, nil},
		{"same secret, other accessor", UpsertACLTokenType, UpsertACLTokenRequest{Token: ACLToken{AccessorID: "x", SecretHash: hashA, Kind: ACLRead}}, ErrExists},
		{"unknown kind", UpsertACLTokenType, UpsertACLTokenRequest{Token: ACLToken{AccessorID: "x", SecretHash: strings.Repeat("c", 64), Kind: "root"}}, ErrInvalid},
		{"worker without node", UpsertACLTokenType, UpsertACLTokenRequest{Token: ACLToken{AccessorID: "x", SecretHash: strings.Repeat("c", 64), Kind: ACLWorker}}, ErrInvalid},
		{"read with node", UpsertACLTokenType, UpsertACLTokenRequest{Token: ACLToken{AccessorID: "x", SecretHash: strings.Repeat("c", 64), Kind: ACLRead, NodeID: "n"}}, ErrInvalid},
		{"hash not hex", UpsertACLTokenType, UpsertACLTokenRequest{Token: ACLToken{AccessorID: "x", SecretHash: strings.Repeat("Z", 64), Kind: ACLRead}}, ErrInvalid},
		{"upper-case hash", UpsertACLTokenType, UpsertACLTokenRequest{Token: ACLToken{AccessorID: "x", SecretHash: strings.Repeat("A", 64), Kind: ACLRead}}, ErrInvalid},
		{"no accessor", UpsertACLTokenType, UpsertACLTokenRequest{Token: ACLToken{SecretHash: strings.Repeat("c", 64), Kind: ACLRead}}, ErrInvalid},
		{"delete unknown", DeleteACLTokenType, DeleteACLTokenRequest{AccessorID: "nope"}, ErrNotFound},
		{"delete worker", DeleteACLTokenType, DeleteACLTokenRequest{AccessorID: "w"}, nil},
	}
	h := newHarness(t)
	for _, tc := range cases {
		before := stateHash(t, h.fsm)
		res := h.apply(tc.typ, tc.body)
		if tc.want == nil {
			if res.Err != nil {
				t.Fatalf("%s: %v", tc.name, res.Err)
			}
			continue
		}
		if !errors.Is(res.Err, tc.want) {
			t.Fatalf("%s: error %v, want %v", tc.name, res.Err, tc.want)
		}
		if stateHash(t, h.fsm) != before {
			t.Fatalf("%s: a rejected command changed the state", tc.name)
		}
	}
	st := h.fsm.State()
	if st.ACLTokenBySecretHash(hashA) == nil || st.ACLToken("w") != nil || len(st.ACLTokens()) != 1 {
		t.Fatalf("tokens after the commands: %+v", st.ACLTokens())
	}
}

func TestACLTokenReplaceKeepsCreation(t *testing.T) {
	h := newHarness(t)
	h.ok(UpsertACLTokenType, UpsertACLTokenRequest{Token: ACLToken{AccessorID: "m", SecretHash: hashA, Kind: ACLRead, CreateTime: 5}})
	h.ok(UpsertACLTokenType, UpsertACLTokenRequest{Token: ACLToken{AccessorID: "m", SecretHash: hashB, Kind: ACLWrite, CreateTime: 9}})
	tok := h.fsm.State().ACLToken("m")
	if tok.CreateIndex != 1 || tok.ModifyIndex != 2 || tok.CreateTime != 5 || tok.Kind != ACLWrite {
		t.Fatalf("replaced token %+v", tok)
	}
	if h.fsm.State().ACLTokenBySecretHash(hashA) != nil {
		t.Fatal("the old secret still resolves after a replace")
	}
}

func TestACLTokensSurviveSnapshot(t *testing.T) {
	h := newHarness(t)
	h.ok(UpsertACLTokenType, UpsertACLTokenRequest{Token: ACLToken{AccessorID: "w", SecretHash: hashB, Kind: ACLWorker, NodeID: "n1"}})
	other := newHarness(t)
	other.ok(UpsertACLTokenType, UpsertACLTokenRequest{Token: ACLToken{AccessorID: "stale", SecretHash: hashA, Kind: ACLManagement}})
	restoreInto(t, h.fsm, other.fsm)
	if stateHash(t, other.fsm) != stateHash(t, h.fsm) {
		t.Fatal("restore changed the tokens")
	}
	if other.fsm.State().ACLTokenBySecretHash(hashA) != nil {
		t.Fatal("restore kept a token of the state it replaced")
	}
}
