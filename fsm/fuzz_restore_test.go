package fsm

import (
	"bytes"
	"io"
	"testing"
)

// FuzzRestore: a snapshot from a disk or an upload is input too. Any bytes
// either restore or fail with an error, never a panic, and a failed restore
// leaves the previous state exactly as it was (restore builds a fresh store
// and swaps it in only at the end).
func FuzzRestore(f *testing.F) {
	seed := fuzzFixture(f)
	seed.ok(UpsertACLTokenType, &UpsertACLTokenRequest{Token: ACLToken{AccessorID: "a", SecretHash: hashA, Kind: ACLRead}})
	valid := snapshotBytes(f, seed.fsm).Bytes()
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	f.Add(valid[:16])
	f.Add([]byte{})
	f.Add([]byte("AMSNAP\x00\x01garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h := fuzzFixture(t)
		before := stateHash(t, h.fsm)
		if err := h.fsm.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
			if stateHash(t, h.fsm) != before {
				t.Fatalf("a failed restore (%v) changed the state", err)
			}
			return
		}
		if _, err := h.fsm.State().Digest(); err != nil {
			t.Fatalf("restored state cannot be read: %v", err)
		}
	})
}
