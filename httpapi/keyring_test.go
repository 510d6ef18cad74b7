package httpapi

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
)

func gkey(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func b64(k []byte) string { return base64.StdEncoding.EncodeToString(k) }

// reporting is a live member that reports the given keys, primary first.
func reporting(name string, status gossip.Status, keys ...[]byte) gossip.Member {
	var fps []string
	for _, k := range keys {
		fps = append(fps, gossip.KeyFingerprint(k))
	}
	return gossip.Member{Name: name, Status: status, Meta: gossip.Meta{Role: gossip.RoleServer, Keyring: fps}}
}

func TestKeyringListing(t *testing.T) {
	e := leaderEnv(t)
	kr, _, err := e.c.Keyring(ctx(t), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(kr.Keys) != 0 || len(kr.Members) != 0 {
		t.Fatalf("empty cluster lists %+v", kr)
	}
	e.b.mustApply(t, fsm.KeyringType, fsm.KeyringRequest{Op: fsm.KeyringInstall, Key: gkey(1)})
	e.b.mustApply(t, fsm.KeyringType, fsm.KeyringRequest{Op: fsm.KeyringInstall, Key: gkey(2)})
	e.b.set(func(b *testBackend) {
		b.members = []gossip.Member{
			reporting("s1", gossip.StatusAlive, gkey(1), gkey(2)),
			reporting("w1", gossip.StatusAlive, gkey(1)),
			reporting("gone", gossip.StatusDead, gkey(1), gkey(2)),
		}
	})
	kr, _, err = e.c.Keyring(ctx(t), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(kr.Keys) != 2 || !kr.Keys[0].Primary || kr.Keys[1].Primary {
		t.Fatalf("keys %+v", kr.Keys)
	}
	for _, k := range kr.Keys {
		if k.Key != "" {
			t.Fatal("key material listed without ?keys=true")
		}
	}
	if kr.Keys[0].Installed != 2 || kr.Keys[1].Installed != 1 || kr.Keys[0].PrimaryOn != 2 {
		t.Errorf("counts over live members: %+v", kr.Keys)
	}
	conv := map[string]bool{}
	for _, m := range kr.Members {
		conv[m.Name] = m.Converged
	}
	if !conv["s1"] || conv["w1"] || !conv["gone"] {
		t.Errorf("convergence %v", conv)
	}
	kr, meta, err := e.c.Keyring(ctx(t), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if kr.Keys[0].Key != b64(gkey(1)) || kr.Keys[1].Key != b64(gkey(2)) {
		t.Errorf("?keys=true answered %+v", kr.Keys)
	}
	// A blocking query wakes when the keyring changes.
	done := make(chan *api.Keyring, 1)
	before := e.b.watches.Load()
	go func() {
		k, _, err := e.c.Keyring(ctx(t), true, &api.QueryOptions{Index: meta.Index, Wait: 10 * time.Second})
		if err != nil {
			t.Error(err)
		}
		done <- k
	}()
	e.b.waitWatching(t, before)
	e.b.mustApply(t, fsm.KeyringType, fsm.KeyringRequest{Op: fsm.KeyringUse, Key: gkey(2)})
	select {
	case k := <-done:
		if k == nil || !k.Keys[1].Primary {
			t.Errorf("blocking query answered %+v", k)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the blocking query did not wake on a keyring change")
	}
}

func TestKeyringChanges(t *testing.T) {
	e := leaderEnv(t)
	post := func(body any, query string) (int, *api.Error) {
		t.Helper()
		resp, raw := e.do(http.MethodPost, "/v1/operator/keyring"+query, mustJSON(t, body))
		if resp.StatusCode == http.StatusNoContent {
			return resp.StatusCode, nil
		}
		return resp.StatusCode, errorBody(t, raw)
	}
	install1 := api.KeyringRequest{Op: api.KeyringInstall, Key: b64(gkey(1))}
	if status, _ := post(install1, ""); status != http.StatusConflict {
		t.Fatalf("a change without a seeded keyring: %d, want 409", status)
	}
	e.b.mustApply(t, fsm.KeyringType, fsm.KeyringRequest{Op: fsm.KeyringInstall, Key: gkey(1)})
	e.b.set(func(b *testBackend) {
		b.members = []gossip.Member{
			reporting("s1", gossip.StatusAlive, gkey(1)),
			reporting("w1", gossip.StatusSuspect, gkey(1)),
			reporting("old", gossip.StatusLeft, gkey(1)),
		}
	})
	cases := []struct {
		name   string
		body   any
		query  string
		status int
	}{
		{"bad base64", api.KeyringRequest{Op: api.KeyringInstall, Key: "%%%"}, "", http.StatusBadRequest},
		{"bad op", api.KeyringRequest{Op: "rotate", Key: b64(gkey(2))}, "", http.StatusBadRequest},
		{"unknown field", map[string]string{"op": "install", "key": b64(gkey(2)), "x": "y"}, "", http.StatusBadRequest},
		{"short key", api.KeyringRequest{Op: api.KeyringInstall, Key: b64([]byte("short"))}, "", http.StatusUnprocessableEntity},
		{"use a key not installed", api.KeyringRequest{Op: api.KeyringUse, Key: b64(gkey(9))}, "?force=true", http.StatusNotFound},
		{"install", api.KeyringRequest{Op: api.KeyringInstall, Key: b64(gkey(2))}, "", http.StatusNoContent},
		{"use before members installed it", api.KeyringRequest{Op: api.KeyringUse, Key: b64(gkey(2))}, "", http.StatusConflict},
		{"remove the primary", api.KeyringRequest{Op: api.KeyringRemove, Key: b64(gkey(1))}, "?force", http.StatusConflict},
	}
	for _, tc := range cases {
		before := stateHash(t, e.b.State())
		status, body := post(tc.body, tc.query)
		if status != tc.status {
			t.Fatalf("%s: %d %+v, want %d", tc.name, status, body, tc.status)
		}
		if status != http.StatusNoContent && stateHash(t, e.b.State()) != before {
			t.Fatalf("%s: a refused change changed the state", tc.name)
		}
	}
	// Once every live member (the one that left does not count) reports the
	// key, use goes through; remove waits until nobody encrypts with the old.
	e.b.set(func(b *testBackend) {
		b.members = []gossip.Member{
			reporting("s1", gossip.StatusAlive, gkey(1), gkey(2)),
			reporting("w1", gossip.StatusSuspect, gkey(1), gkey(2)),
			reporting("old", gossip.StatusLeft, gkey(1)),
		}
	})
	if err := e.c.ChangeKeyring(ctx(t), api.KeyringUse, b64(gkey(2)), false); err != nil {
		t.Fatalf("use after every live member installed the key: %v", err)
	}
	if err := e.c.ChangeKeyring(ctx(t), api.KeyringRemove, b64(gkey(1)), false); !api.IsCode(err, api.CodeConflict) {
		t.Fatalf("remove while members encrypt with the key: %v, want conflict", err)
	}
	if err := e.c.ChangeKeyring(ctx(t), api.KeyringRemove, b64(gkey(1)), true); err != nil {
		t.Fatalf("forced remove: %v", err)
	}
	kr := e.b.State().Keyring()
	if len(kr.Keys) != 1 || !bytes.Equal(kr.Primary, gkey(2)) {
		t.Fatalf("keyring after rotation %+v", kr)
	}
}

// A change the keyring can never apply is refused for that reason, not
// with "members are behind; wait for them": an operator told to wait for
// the members would wait for good (on a real cluster `keyring use` of a
// key never installed and `keyring remove` of the primary both said so).
func TestKeyringRefusesImpossibleChangesBeforeWaiting(t *testing.T) {
	e := leaderEnv(t)
	e.b.mustApply(t, fsm.KeyringType, fsm.KeyringRequest{Op: fsm.KeyringInstall, Key: gkey(1)})
	e.b.set(func(b *testBackend) {
		b.members = []gossip.Member{reporting("s1", gossip.StatusAlive, gkey(1)), reporting("w1", gossip.StatusAlive, gkey(1))}
	})
	cases := []struct {
		name string
		op   string
		key  []byte
		code string
		want string
	}{
		{"use a key never installed", api.KeyringUse, gkey(9), api.CodeNotFound, "install it before using it"},
		{"remove a key never installed", api.KeyringRemove, gkey(9), api.CodeNotFound, "not found"},
		{"remove the last key", api.KeyringRemove, gkey(1), api.CodeConflict, "last gossip key"},
	}
	for _, tc := range cases {
		before := stateHash(t, e.b.State())
		err := e.c.ChangeKeyring(ctx(t), tc.op, b64(tc.key), false)
		if !api.IsCode(err, tc.code) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "wait for them") {
			t.Fatalf("%s: %v, want %s saying %q", tc.name, err, tc.code, tc.want)
		}
		if stateHash(t, e.b.State()) != before {
			t.Fatalf("%s: a refused change changed the state", tc.name)
		}
	}
	e.b.mustApply(t, fsm.KeyringType, fsm.KeyringRequest{Op: fsm.KeyringInstall, Key: gkey(2)})
	err := e.c.ChangeKeyring(ctx(t), api.KeyringRemove, b64(gkey(1)), false)
	if !api.IsCode(err, api.CodeConflict) || !strings.Contains(err.Error(), "primary gossip key") {
		t.Fatalf("remove the primary: %v, want conflict naming the primary", err)
	}
}
