package agent

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/amserver/amserver/gossip"
)

func gossipKey(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

func loopbackGossip(name string, key []byte) gossip.Config {
	cfg := gossip.DefaultConfig()
	cfg.NodeName, cfg.BindAddr, cfg.BindPort = name, "127.0.0.1", 0
	cfg.Meta = gossip.Meta{Role: gossip.RoleServer}
	cfg.SecretKey = key
	return cfg
}

// A server restarted after a rotation with its old --encrypt key starts
// gossip with the keyring it last applied, so it can join the members that
// now encrypt with the new key. On a real cluster s3, stopped with SIGTERM
// after a rotation (so out of the Raft configuration) and started again
// with the same flags, logged "no installed keys could decrypt the message"
// for good and never came back.
func TestRestartAfterRotationJoinsWithRememberedKeyring(t *testing.T) {
	oldKey, newKey := gossipKey(1), gossipKey(2)
	rotated, err := gossip.New(loopbackGossip("s1", newKey))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rotated.Shutdown() })

	dir := t.TempDir()
	if kr, err := loadGossipKeyring(dir); err != nil || kr != nil {
		t.Fatalf("no file: %v, %v", kr, err)
	}
	if err := saveGossipKeyring(dir, savedKeyring{Keys: [][]byte{newKey}, Primary: newKey}); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(filepath.Join(dir, gossipKeyringFile)); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("keyring file: %v, %v; want mode 0600", info, err)
	}
	kr, err := loadGossipKeyring(dir)
	if err != nil || kr == nil {
		t.Fatalf("load: %v, %v", kr, err)
	}
	restarted, err := newGossip(loopbackGossip("s3", oldKey), kr) // --encrypt is still the old key
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = restarted.Shutdown() })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := restarted.Join(ctx, []string{rotated.LocalAddr()}); err != nil {
		t.Fatalf("restarted server cannot join the rotated cluster: %v", err)
	}

	if err := os.WriteFile(filepath.Join(dir, gossipKeyringFile), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadGossipKeyring(dir); err == nil {
		t.Fatal("a keyring file without keys loaded without an error")
	}
}

// TestWithKeyAddsTheConfiguredKey: the configured key joins the remembered
// ones once, so a key newer than the remembered keyring still decrypts.
func TestWithKeyAddsTheConfiguredKey(t *testing.T) {
	old, cur := gossipKey(1), gossipKey(2)
	for _, tc := range []struct {
		name string
		keys [][]byte
		want int
	}{
		{"absent: added", [][]byte{old}, 2},
		{"present: kept once", [][]byte{old, cur}, 2},
	} {
		got := withKey(tc.keys, cur)
		if len(got) != tc.want || !bytes.Equal(got[1], cur) {
			t.Fatalf("%s: %d keys %x, want %d with the configured key", tc.name, len(got), got, tc.want)
		}
	}
	keys := [][]byte{old}
	withKey(keys, cur)
	if len(keys) != 1 {
		t.Fatal("withKey changed its argument")
	}
}
