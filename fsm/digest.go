package fsm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Digest is a SHA-256 over every table's rows in index order. Replicas that
// applied the same log hold the same digest; the fault suite compares them
// after every heal to prove that the servers converged.
func (s *State) Digest() (string, error) {
	h := sha256.New()
	for _, table := range Tables {
		it, err := s.txn.Get(table, "id")
		if err != nil {
			return "", fmt.Errorf("digest: iterate %s: %w", table, err)
		}
		_, _ = h.Write([]byte(table))
		for raw := it.Next(); raw != nil; raw = it.Next() {
			b, err := json.Marshal(raw)
			if err != nil {
				return "", fmt.Errorf("digest: marshal %s row: %w", table, err)
			}
			_, _ = h.Write(b)
			_, _ = h.Write([]byte{'\n'})
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
