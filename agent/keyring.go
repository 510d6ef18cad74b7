package agent

import (
	"context"
	"time"

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
		watch := s.fsm.WatchKeyring()
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
				s.rememberKeyring(kr.Keys, kr.Primary)
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
