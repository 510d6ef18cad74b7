package fsm

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/amserver/amserver/internal/rowstore"

	"github.com/amserver/amserver/ledger"
)

// laterTables were added after the digest's first form; each is hashed
// only when it holds rows, so a state without templates keeps the digest
// it had before they existed (servers compare digests across upgrades).
var laterTables = map[string]bool{tableTemplates: true, tableBlobs: true, tableCaps: true}

// nextHashed is the iterator's next row the digest covers. A cap scope
// without caps holds only usage, which the pools' usage already determines:
// leaving it out keeps the digest of a state that never set cluster or
// group caps the one it had before they existed.
func nextHashed(it rowstore.ResultIterator) any {
	for {
		raw := it.Next()
		if b, ok := raw.(*Bundle); ok {
			return withoutDisplayOnly(b)
		}
		if cs, ok := raw.(*CapScope); !ok || cs.Caps != (ledger.PoolCaps{}) {
			return raw
		}
	}
}

// withoutDisplayOnly is b without what servers keep for display only: its
// jobs' messages (the worker's words) and where a finished batch bundle's
// jobs last ran. Servers from before either field apply the same commands
// without it during a rolling upgrade, and servers at the same index must
// still agree.
func withoutDisplayOnly(b *Bundle) *Bundle {
	has := b.Ran != nil
	for _, r := range b.Replicas {
		for _, j := range r.Jobs {
			has = has || j.Message != ""
		}
	}
	if !has {
		return b
	}
	cp := cloneBundle(b)
	cp.Ran = nil
	for i := range cp.Replicas {
		for k := range cp.Replicas[i].Jobs {
			cp.Replicas[i].Jobs[k].Message = ""
		}
	}
	return cp
}

// Digest is a SHA-256 over every table's rows in index order. Replicas that
// applied the same log hold the same digest; the fault suite compares them
// after every heal to prove that the servers converged.
func (s *State) Digest() (string, error) {
	h := sha256.New()
	for _, table := range Tables {
		it, err := s.txn.All(table, "id")
		if err != nil {
			return "", fmt.Errorf("digest: iterate %s: %w", table, err)
		}
		raw := nextHashed(it)
		if raw == nil && laterTables[table] {
			continue
		}
		_, _ = h.Write([]byte(table))
		for ; raw != nil; raw = nextHashed(it) {
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
