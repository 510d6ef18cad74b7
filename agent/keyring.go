package agent

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
)

// keyringRetry is how often a server retries seeding or applying the
// keyring after a failure (or while it waits to lead and seed).
const keyringRetry = time.Second

// watchKeyring keeps this server's gossip keyring equal to the replicated
// one, on every server. The replicated keyring wins over --encrypt: that
// key only seeds the replicated keyring, which the leader does when the
// keyring table is still empty. Key rotations are three Raft commands
// (install, use, remove) and each is applied here as it commits, so every
// server goes through the same safe order.
func (s *Server) watchKeyring(ctx context.Context) {
	var applied *fsm.Keyring // the row last applied; rows are immutable, so identity means unchanged
	for {
		watch := s.fsm.WatchCh()
		kr := s.store.State().Keyring()
		retry := false
		switch {
		case kr != nil && kr != applied:
			if err := s.gossip.SetKeyring(ctx, kr.Keys, kr.Primary); err != nil {
				if ctx.Err() == nil {
					s.logger.Warn("applying the replicated gossip keyring failed", "err", err)
				}
				retry = true
			} else {
				applied = kr
			}
		case kr == nil && len(s.cfg.Gossip.SecretKey) > 0:
			retry = !s.seedKeyring(ctx)
		}
		var tick <-chan time.Time
		if retry {
			tick = time.After(keyringRetry)
		}
		select {
		case <-ctx.Done():
			return
		case <-watch:
		case <-tick:
		}
	}
}

// seedKeyring installs this server's --encrypt key as the first key of the
// replicated keyring, if it leads. It reports whether nothing is left to do
// here (another server may still seed).
func (s *Server) seedKeyring(ctx context.Context) bool {
	if !s.store.IsLeader() || !s.store.Ready() {
		return false // a follower waits: the leader seeds, or it may lead later
	}
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := s.store.Apply(actx, fsm.KeyringType, &fsm.KeyringRequest{Op: fsm.KeyringInstall, Key: s.cfg.Gossip.SecretKey})
	switch {
	case err != nil:
		if ctx.Err() == nil {
			s.logger.Warn("seeding the gossip keyring failed", "err", err)
		}
		return false
	case res.Err != nil:
		s.logger.Error("seeding the gossip keyring was refused", "err", res.Err)
		return true
	}
	s.logger.Info("gossip keyring seeded with this server's --encrypt key")
	return true
}

// followKeyring keeps a worker's gossip keyring equal to the servers'
// replicated keyring, fetched over the API with blocking queries. It runs
// apart from gossip on purpose: a worker that missed a rotation cannot
// gossip with the old key, but can still reach a server given with
// --servers, learn the new key and rejoin.
func (w *Worker) followKeyring(ctx context.Context) {
	backoff := newBackoff(200*time.Millisecond, 5*time.Second)
	var index uint64
	for ctx.Err() == nil {
		next, err := w.syncKeyring(ctx, index)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			w.logger.Debug("following the gossip keyring failed; retrying", "err", err)
			w.rotate()
			backoff.wait(ctx)
			continue
		}
		backoff.reset()
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
