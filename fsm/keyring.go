package fsm

import (
	"bytes"
	"fmt"
	"slices"
)

// Keyring operations (KeyringRequest.Op).
const (
	KeyringInstall = "install"
	KeyringUse     = "use"
	KeyringRemove  = "remove"
)

// MaxGossipKeys bounds the keyring: memberlist tries every key on every
// message it cannot decrypt with the primary, and each key's fingerprint
// travels in the members' gossip metadata.
const MaxGossipKeys = 8

// keyringID is the key of the keyring table's one row.
const keyringID = "gossip"

// KeyringRequest changes the replicated gossip keyring.
type KeyringRequest struct {
	Op  string
	Key []byte
}

// Keyring is the replicated gossip keyring: every installed key, in the
// order installed, and the primary one that members encrypt with. Servers
// and workers apply it to their memberlist keyrings. The keys are secrets:
// they sit in the Raft log and in snapshots in plain form.
type Keyring struct {
	ID          string
	Keys        [][]byte
	Primary     []byte
	ModifyIndex uint64
}

// Has reports whether key is installed.
func (k *Keyring) Has(key []byte) bool {
	return slices.ContainsFunc(k.Keys, func(x []byte) bool { return bytes.Equal(x, key) })
}

// ValidGossipKey checks a key's length: AES-128, -192 or -256.
func ValidGossipKey(key []byte) error {
	switch len(key) {
	case 16, 24, 32:
		return nil
	}
	return fmt.Errorf("%w: a gossip key is 16, 24 or 32 bytes, got %d", ErrInvalid, len(key))
}

// Keyring returns the replicated gossip keyring, or nil before any key was
// installed.
func (s *State) Keyring() *Keyring { return first[Keyring](s.txn, tableKeyring, "id", keyringID) }

// applyKeyring installs, uses or removes one key. The first key installed
// becomes the primary (that is how a cluster's --encrypt key seeds it).
// Removing the primary or the last key is refused: members would be left
// with nothing to encrypt with, or cut off.
func (f *FSM) applyKeyring(t *tx, req *KeyringRequest) (any, error) {
	cur := t.State.Keyring()
	kr := Keyring{ID: keyringID}
	if cur != nil {
		kr.Keys, kr.Primary = slices.Clone(cur.Keys), cur.Primary
	}
	switch req.Op {
	case KeyringInstall:
		if err := ValidGossipKey(req.Key); err != nil {
			return nil, err
		}
		if kr.Has(req.Key) {
			return nil, nil // idempotent: a retried install changes nothing
		}
		if len(kr.Keys) >= MaxGossipKeys {
			return nil, fmt.Errorf("%w: the keyring already holds %d keys; remove one first", ErrConflict, len(kr.Keys))
		}
		kr.Keys = append(kr.Keys, bytes.Clone(req.Key))
		if kr.Primary == nil {
			kr.Primary = bytes.Clone(req.Key)
		}
	case KeyringUse:
		if !kr.Has(req.Key) {
			return nil, fmt.Errorf("gossip key %w: install it before using it", ErrNotFound)
		}
		if bytes.Equal(kr.Primary, req.Key) {
			return nil, nil
		}
		kr.Primary = bytes.Clone(req.Key)
	case KeyringRemove:
		if !kr.Has(req.Key) {
			return nil, fmt.Errorf("gossip key %w", ErrNotFound)
		}
		if len(kr.Keys) == 1 {
			return nil, fmt.Errorf("%w: it is the last gossip key; install and use another key first", ErrConflict)
		}
		if bytes.Equal(kr.Primary, req.Key) {
			return nil, fmt.Errorf("%w: it is the primary gossip key; use another key first", ErrConflict)
		}
		kr.Keys = slices.DeleteFunc(kr.Keys, func(x []byte) bool { return bytes.Equal(x, req.Key) })
	default:
		return nil, fmt.Errorf("%w: keyring operation %q (want install, use or remove)", ErrInvalid, req.Op)
	}
	kr.ModifyIndex = t.index
	t.insert(tableKeyring, &kr)
	return nil, nil
}
