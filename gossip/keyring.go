package gossip

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/hashicorp/memberlist"
)

// KeyFingerprint names a gossip key without revealing it: the first 8 bytes
// of its SHA-256, in hex.
func KeyFingerprint(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:8])
}

// newKeyring is the member's keyring: the configured key, or none. It is
// handed to memberlist even when empty, so that SetKeyring can turn
// encryption on later (a server restarted without --encrypt that learns the
// cluster's keys from Raft).
func newKeyring(secret []byte) (*memberlist.Keyring, error) {
	kr, err := memberlist.NewKeyring(nil, secret)
	if err != nil {
		return nil, fmt.Errorf("gossip: keyring: %w", err)
	}
	return kr, nil
}

// Keyring returns the installed keys, the primary (encrypting) one first;
// empty when gossip is not encrypted.
func (g *Gossip) Keyring() [][]byte {
	g.keyMu.Lock()
	defer g.keyMu.Unlock()
	return cloneKeys(g.keyring.GetKeys())
}

// EncryptionEnabled reports whether this member encrypts gossip.
func (g *Gossip) EncryptionEnabled() bool { return len(g.Keyring()) > 0 }

// SetKeyring makes the local keyring hold exactly keys, with primary as the
// encrypting key, then publishes the new fingerprints in the metadata. It
// works in the order that keeps the pool connected while members converge
// at different times: first install the missing keys (so this member can
// decrypt whatever the others send), then switch the primary, then remove
// the keys no longer wanted. An empty keys leaves the keyring unchanged.
func (g *Gossip) SetKeyring(ctx context.Context, keys [][]byte, primary []byte) error {
	if len(keys) == 0 {
		return nil
	}
	if !slices.ContainsFunc(keys, func(k []byte) bool { return bytes.Equal(k, primary) }) {
		return errors.New("gossip: the primary key must be one of the keys")
	}
	// memberlist keeps the slices it is given; ours may be shared (the FSM's rows).
	changed, err := g.reconcileKeys(cloneKeys(keys), bytes.Clone(primary))
	if err != nil || !changed {
		return err
	}
	g.logger.Info("gossip keyring changed", "primary", KeyFingerprint(primary), "keys", len(keys))
	return g.publishKeyring(ctx)
}

func (g *Gossip) reconcileKeys(keys [][]byte, primary []byte) (bool, error) {
	g.keyMu.Lock()
	defer g.keyMu.Unlock()
	have := cloneKeys(g.keyring.GetKeys())
	changed := false
	for _, k := range keys {
		if !containsKey(have, k) {
			if err := g.keyring.AddKey(k); err != nil {
				return changed, fmt.Errorf("gossip: install key %s: %w", KeyFingerprint(k), err)
			}
			changed = true
		}
	}
	if !bytes.Equal(g.keyring.GetPrimaryKey(), primary) {
		if err := g.keyring.UseKey(primary); err != nil {
			return changed, fmt.Errorf("gossip: use key %s: %w", KeyFingerprint(primary), err)
		}
		changed = true
	}
	for _, k := range have {
		if !containsKey(keys, k) {
			if err := g.keyring.RemoveKey(k); err != nil {
				return changed, fmt.Errorf("gossip: remove key %s: %w", KeyFingerprint(k), err)
			}
			changed = true
		}
	}
	return changed, nil
}

// publishKeyring puts the keyring's fingerprints in our metadata.
func (g *Gossip) publishKeyring(ctx context.Context) error {
	g.mu.Lock()
	if g.shutdown {
		g.mu.Unlock()
		return ErrShutdown
	}
	m := g.meta
	m.Keyring = g.fingerprints()
	b, err := EncodeMeta(m)
	if err != nil {
		g.mu.Unlock()
		return fmt.Errorf("gossip: publish keyring: %w", err)
	}
	g.meta = m
	g.hooks.setMeta(b)
	g.mu.Unlock()
	return g.broadcastMeta(ctx)
}

// fingerprints lists the installed keys' fingerprints, primary first.
func (g *Gossip) fingerprints() []string {
	keys := g.Keyring()
	if len(keys) == 0 {
		return nil
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = KeyFingerprint(k)
	}
	slices.Sort(out[1:]) // the primary stays first; the rest in a stable order
	return out
}

func containsKey(keys [][]byte, k []byte) bool {
	return slices.ContainsFunc(keys, func(x []byte) bool { return bytes.Equal(x, k) })
}

func cloneKeys(keys [][]byte) [][]byte {
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = bytes.Clone(k)
	}
	return out
}
