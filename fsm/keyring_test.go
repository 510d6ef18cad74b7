package fsm

import (
	"bytes"
	"errors"
	"testing"
)

func gk(b byte) []byte { return bytes.Repeat([]byte{b}, 32) }

// TestKeyringCommandValidation applies a sequence of keyring commands; each
// step states whether it must fail (and how) and the keyring after it.
func TestKeyringCommandValidation(t *testing.T) {
	steps := []struct {
		name        string
		op          string
		key         []byte
		wantErr     error
		wantKeys    [][]byte
		wantPrimary []byte
	}{
		{"use before any key", KeyringUse, gk(1), ErrNotFound, nil, nil},
		{"remove before any key", KeyringRemove, gk(1), ErrNotFound, nil, nil},
		{"install a short key", KeyringInstall, []byte("short"), ErrInvalid, nil, nil},
		{"install a 33-byte key", KeyringInstall, bytes.Repeat([]byte{1}, 33), ErrInvalid, nil, nil},
		{"install an empty key", KeyringInstall, nil, ErrInvalid, nil, nil},
		{"first install seeds the primary", KeyringInstall, gk(1), nil, [][]byte{gk(1)}, gk(1)},
		{"remove the last key", KeyringRemove, gk(1), ErrConflict, [][]byte{gk(1)}, gk(1)},
		{"install a second key", KeyringInstall, gk(2), nil, [][]byte{gk(1), gk(2)}, gk(1)},
		{"install it again is a no-op", KeyringInstall, gk(2), nil, [][]byte{gk(1), gk(2)}, gk(1)},
		{"install a 16-byte key", KeyringInstall, bytes.Repeat([]byte{3}, 16), nil, [][]byte{gk(1), gk(2), bytes.Repeat([]byte{3}, 16)}, gk(1)},
		{"remove the primary", KeyringRemove, gk(1), ErrConflict, [][]byte{gk(1), gk(2), bytes.Repeat([]byte{3}, 16)}, gk(1)},
		{"use a key not installed", KeyringUse, gk(9), ErrNotFound, [][]byte{gk(1), gk(2), bytes.Repeat([]byte{3}, 16)}, gk(1)},
		{"use the second key", KeyringUse, gk(2), nil, [][]byte{gk(1), gk(2), bytes.Repeat([]byte{3}, 16)}, gk(2)},
		{"remove the old primary", KeyringRemove, gk(1), nil, [][]byte{gk(2), bytes.Repeat([]byte{3}, 16)}, gk(2)},
		{"remove a key not installed", KeyringRemove, gk(1), ErrNotFound, [][]byte{gk(2), bytes.Repeat([]byte{3}, 16)}, gk(2)},
		{"unknown operation", "rotate", gk(2), ErrInvalid, [][]byte{gk(2), bytes.Repeat([]byte{3}, 16)}, gk(2)},
	}
	h := newHarness(t)
	for _, st := range steps {
		before := h.fsm.State().Index(tableKeyring)
		res := h.apply(KeyringType, &KeyringRequest{Op: st.op, Key: st.key})
		if st.wantErr != nil && !errors.Is(res.Err, st.wantErr) {
			t.Fatalf("%s: error %v, want %v", st.name, res.Err, st.wantErr)
		}
		if st.wantErr == nil && res.Err != nil {
			t.Fatalf("%s: unexpected error %v", st.name, res.Err)
		}
		if st.wantErr != nil && h.fsm.State().Index(tableKeyring) != before {
			t.Fatalf("%s: a refused command changed the keyring table", st.name)
		}
		kr := h.fsm.State().Keyring()
		if st.wantKeys == nil {
			if kr != nil {
				t.Fatalf("%s: keyring %+v, want none", st.name, kr)
			}
			continue
		}
		if kr == nil || !equalKeys(kr.Keys, st.wantKeys) || !bytes.Equal(kr.Primary, st.wantPrimary) {
			t.Fatalf("%s: keyring %+v, want keys %v primary %v", st.name, kr, st.wantKeys, st.wantPrimary)
		}
	}
}

func equalKeys(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func TestKeyringIsBounded(t *testing.T) {
	h := newHarness(t)
	for i := range MaxGossipKeys {
		h.ok(KeyringType, &KeyringRequest{Op: KeyringInstall, Key: gk(byte(i + 1))})
	}
	res := h.apply(KeyringType, &KeyringRequest{Op: KeyringInstall, Key: gk(200)})
	if !errors.Is(res.Err, ErrConflict) {
		t.Fatalf("install past the bound: %v, want ErrConflict", res.Err)
	}
}

// TestKeyringSnapshotRoundTrip: the keyring survives a snapshot restored
// over an FSM that holds a different keyring, which it replaces.
func TestKeyringSnapshotRoundTrip(t *testing.T) {
	h := newHarness(t)
	h.ok(KeyringType, &KeyringRequest{Op: KeyringInstall, Key: gk(1)})
	h.ok(KeyringType, &KeyringRequest{Op: KeyringInstall, Key: gk(2)})
	h.ok(KeyringType, &KeyringRequest{Op: KeyringUse, Key: gk(2)})
	h.ok(UpsertPoolType, &UpsertPoolRequest{Pool: Pool{Name: "p"}})
	other := newHarness(t)
	other.ok(KeyringType, &KeyringRequest{Op: KeyringInstall, Key: gk(7)})
	restoreInto(t, h.fsm, other.fsm)
	kr := other.fsm.State().Keyring()
	if kr == nil || !equalKeys(kr.Keys, [][]byte{gk(1), gk(2)}) || !bytes.Equal(kr.Primary, gk(2)) {
		t.Fatalf("restored keyring %+v", kr)
	}
	if got, want := stateHash(t, other.fsm), stateHash(t, h.fsm); got != want {
		t.Fatalf("restored state differs: %s != %s", got, want)
	}
	if other.fsm.State().Index(tableKeyring) != h.fsm.State().Index(tableKeyring) {
		t.Fatal("the keyring table's index did not survive the snapshot")
	}
}
