package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/amserver/amserver/gossip"
)

// gossipKeyringFile, in a server's data directory, holds the replicated
// gossip keyring this server last applied. A server restarted after a
// rotation with its old --encrypt key could not decrypt anyone's gossip,
// and its Raft state does not help before a leader reaches it, which a
// server that left gossip on SIGTERM (and so the Raft configuration) waits
// for in vain. The keys already sit in plain form in the Raft log beside it.
const gossipKeyringFile = "gossip-keyring.json"

// savedKeyring is the file's content: every key, and the primary one.
type savedKeyring struct {
	Keys    [][]byte `json:"keys"`
	Primary []byte   `json:"primary"`
}

// loadGossipKeyring reads the remembered keyring; nil when there is none.
func loadGossipKeyring(dir string) (*savedKeyring, error) {
	var kr savedKeyring
	if found, err := readDataFile(dir, gossipKeyringFile, &kr); !found || err != nil {
		return nil, err
	}
	if len(kr.Keys) == 0 || len(kr.Primary) == 0 {
		return nil, fmt.Errorf("%s holds no key", gossipKeyringFile)
	}
	return &kr, nil
}

// saveGossipKeyring writes kr atomically, readable by the owner only.
func saveGossipKeyring(dir string, kr savedKeyring) error {
	return writeDataFile(dir, gossipKeyringFile, kr)
}

// newGossip starts gossip with the remembered keyring in place of the
// configured key (kr nil: as configured). The replicated keyring replaces
// it again once this server's state catches up (watchKeyring).
func newGossip(gc gossip.Config, kr *savedKeyring) (*gossip.Gossip, error) {
	if kr == nil || len(gc.SecretKey) == 0 {
		return gossip.New(gc)
	}
	keys := withKey(kr.Keys, gc.SecretKey)
	gc.SecretKey = kr.Primary
	g, err := gossip.New(gc)
	if err != nil {
		return nil, err
	}
	// Nobody has joined yet, so publishing the new fingerprints is quick.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := g.SetKeyring(ctx, keys, kr.Primary); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		_ = g.Shutdown()
		return nil, fmt.Errorf("apply the remembered gossip keyring: %w", err)
	}
	return g, nil
}

// withKey is keys with key added when absent: the configured --encrypt key
// also decrypts, in case it is newer than the keyring remembered here (a
// rotation made while this server was away). The replicated keyring
// replaces both once this server's state catches up.
func withKey(keys [][]byte, key []byte) [][]byte {
	if slices.ContainsFunc(keys, func(k []byte) bool { return bytes.Equal(k, key) }) {
		return keys
	}
	return append(slices.Clone(keys), key)
}

// rememberedKeyring is the keyring to start gossip with, from the data
// directory; nil (with a warning when unreadable) to start from --encrypt.
func (s *Server) rememberedKeyring() *savedKeyring {
	if s.cfg.DataDir == "" || len(s.cfg.Gossip.SecretKey) == 0 {
		return nil
	}
	kr, err := loadGossipKeyring(s.cfg.DataDir)
	if err != nil {
		s.logger.Warn("starting gossip with --encrypt: the keyring last applied here cannot be read", "err", err)
		return nil
	}
	if kr != nil {
		s.logger.Info("gossip starts with the keyring last applied here, not --encrypt (the replicated keyring wins)", "keys", len(kr.Keys))
	}
	return kr
}

// rememberKeyring saves the keyring just applied, for the next start.
func (s *Server) rememberKeyring(keys [][]byte, primary []byte) {
	if s.cfg.DataDir == "" {
		return
	}
	if err := saveGossipKeyring(s.cfg.DataDir, savedKeyring{Keys: keys, Primary: primary}); err != nil {
		s.logger.Warn("remembering the gossip keyring failed: a restart with an outdated --encrypt may not rejoin gossip", "err", err)
	}
}
