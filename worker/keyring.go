package worker

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/backoff"
)

// followKeyring keeps a worker's gossip keyring equal to the servers'
// replicated keyring, fetched over the API with blocking queries. It runs
// apart from gossip on purpose: a worker that missed a rotation cannot
// gossip with the old key, but can still reach a server given with
// --servers, learn the new key and rejoin.
func (w *Worker) followKeyring(ctx context.Context) {
	bo := backoff.New(200*time.Millisecond, 5*time.Second)
	var index uint64
	for ctx.Err() == nil {
		next, err := w.syncKeyring(ctx, index)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			w.logger.Debug("following the gossip keyring failed; retrying", "err", err)
			w.rotate()
			bo.Wait(ctx)
			continue
		}
		bo.Reset()
		index = next
	}
}

// syncKeyring waits for the keyring to change past index, applies it and
// returns the index to wait on next.
func (w *Worker) syncKeyring(ctx context.Context, index uint64) (uint64, error) {
	c, err := w.client()
	if err != nil {
		return index, err
	}
	kr, meta, err := c.Keyring(ctx, true, &api.QueryOptions{Index: index, Wait: w.cfg.PollWait})
	if err != nil {
		return index, err
	}
	if err := w.applyKeyring(ctx, kr); err != nil {
		return index, err
	}
	if meta.Index < index {
		return 0, nil // the index went backwards (a restore): start over
	}
	return meta.Index, nil
}

// applyKeyring installs the listed keys in this worker's gossip. Keys come
// base64-encoded, and only to a token allowed to read them.
func (w *Worker) applyKeyring(ctx context.Context, kr *api.Keyring) error {
	var keys [][]byte
	var primary []byte
	for _, k := range kr.Keys {
		key, err := base64.StdEncoding.DecodeString(k.Key)
		if err != nil || len(key) == 0 {
			return fmt.Errorf("keyring key %s: not base64 key material (is the token allowed to read keys?)", k.Fingerprint)
		}
		keys = append(keys, key)
		if k.Primary {
			primary = key
		}
	}
	if len(keys) == 0 {
		return nil // the cluster does not encrypt gossip
	}
	if primary == nil {
		return errors.New("keyring has no primary key")
	}
	return w.gossip.SetKeyring(ctx, keys, primary)
}
