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

// Refusal is why the keyring refuses op on key, or nil. Apply and the API
// share it: the API checks it before it looks at the members, so that an
// impossible change is refused for what it is, not "waited for".
func (k *Keyring) Refusal(op string, key []byte) error {
	switch op {
	case KeyringInstall:
		if err := ValidGossipKey(key); err != nil {
			return err
		}
		if !k.Has(key) && len(k.Keys) >= MaxGossipKeys {
			return fmt.Errorf("%w: the keyring already holds %d keys; remove one first", ErrConflict, len(k.Keys))
		}
	case KeyringUse:
		if !k.Has(key) {
			return fmt.Errorf("gossip key %w: install it before using it", ErrNotFound)
		}
	case KeyringRemove:
		if !k.Has(key) {
			return fmt.Errorf("gossip key %w", ErrNotFound)
		}
		if len(k.Keys) == 1 {
			return fmt.Errorf("%w: it is the last gossip key; install and use another key first", ErrConflict)
		}
		if bytes.Equal(k.Primary, key) {
			return fmt.Errorf("%w: it is the primary gossip key; use another key first", ErrConflict)
		}
	default:
		return fmt.Errorf("%w: keyring operation %q (want install, use or remove)", ErrInvalid, op)
	}
	return nil
}

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
	if err := kr.Refusal(req.Op, req.Key); err != nil {
		return nil, err
	}
	switch req.Op {
	case KeyringInstall:
		if kr.Has(req.Key) {
			return nil, nil // idempotent: a retried install changes nothing
		}
		kr.Keys = append(kr.Keys, bytes.Clone(req.Key))
		if kr.Primary == nil {
			kr.Primary = bytes.Clone(req.Key)
		}
	case KeyringUse:
		if bytes.Equal(kr.Primary, req.Key) {
			return nil, nil
		}
		kr.Primary = bytes.Clone(req.Key)
	case KeyringRemove:
		kr.Keys = slices.DeleteFunc(kr.Keys, func(x []byte) bool { return bytes.Equal(x, req.Key) })
	}
	kr.ModifyIndex = t.index
	t.insert(tableKeyring, &kr)
	return nil, nil
}
