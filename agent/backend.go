package agent

import (
	"context"
	"fmt"
	"strconv"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/httpapi"
)

// backend adapts the server to what the HTTP API declares it needs.
type backend struct {
	*Store
	srv *Server
}

var _ httpapi.Backend = (*backend)(nil)

func (b *backend) ServerID() string { return b.srv.cfg.NodeID }

func (b *backend) Members() []gossip.Member {
	if b.srv.gossip == nil {
		return nil
	}
	return b.srv.gossip.Members()
}

func (b *backend) Plan(ctx context.Context, spec fsm.BundleSpec) (*fsm.Bundle, *fsm.Explain, error) {
	if err := b.ReadBarrier(ctx, httpapi.ReadDefault); err != nil {
		return nil, nil, err
	}
	st := b.State()
	return b.srv.engine.DryRun(st, spec, b.raft.AppliedIndex())
}

func (b *backend) RaftInfo(ctx context.Context) (httpapi.RaftInfo, error) {
	stats := b.raft.Stats()
	num := func(key string) uint64 {
		v, _ := strconv.ParseUint(stats[key], 10, 64)
		return v
	}
	info := httpapi.RaftInfo{
		State: stateName(b.raft.State()), Term: num("term"), LastIndex: b.raft.LastIndex(),
		CommitIndex: b.raft.CommitIndex(), AppliedIndex: b.raft.AppliedIndex(),
		LastSnapshotIndex: num("last_snapshot_index"), ConfigIndex: num("latest_configuration_index"),
	}
	peers, err := b.peers()
	if err != nil {
		return info, err
	}
	info.Servers = peers
	return info, nil
}

func stateName(s raft.RaftState) string {
	switch s {
	case raft.Leader:
		return "leader"
	case raft.Candidate:
		return "candidate"
	case raft.Shutdown:
		return "shutdown"
	default:
		return "follower"
	}
}

func (b *backend) peers() ([]httpapi.Peer, error) {
	f := b.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, fmt.Errorf("raft configuration: %w", err)
	}
	_, leader := b.raft.LeaderWithID()
	var out []httpapi.Peer
	for _, s := range f.Configuration().Servers {
		out = append(out, httpapi.Peer{
			ID: string(s.ID), Address: string(s.Address), Suffrage: suffrageName(s.Suffrage), Leader: s.ID == leader,
		})
	}
	return out, nil
}

func suffrageName(s raft.ServerSuffrage) string {
	switch s {
	case raft.Voter:
		return "voter"
	case raft.Nonvoter:
		return "nonvoter"
	default:
		return "staging"
	}
}

func (b *backend) TransferLeadership(ctx context.Context, id string) error {
	if !b.IsLeader() {
		return httpapi.ErrNotLeader
	}
	var f raft.Future
	if id == "" {
		f = b.raft.LeadershipTransfer()
	} else {
		addr, err := b.serverAddr(id)
		if err != nil {
			return err
		}
		f = b.raft.LeadershipTransferToServer(raft.ServerID(id), addr)
	}
	if err := f.Error(); err != nil {
		return fmt.Errorf("%w: leadership transfer: %w", httpapi.ErrOutcomeUnknown, err)
	}
	return nil
}

func (b *backend) serverAddr(id string) (raft.ServerAddress, error) {
	f := b.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return "", fmt.Errorf("raft configuration: %w", err)
	}
	for _, s := range f.Configuration().Servers {
		if string(s.ID) == id {
			return s.Address, nil
		}
	}
	return "", fmt.Errorf("server %s: %w", id, fsm.ErrNotFound)
}

func (b *backend) RemovePeer(ctx context.Context, id string) error {
	if !b.IsLeader() {
		return httpapi.ErrNotLeader
	}
	if _, err := b.serverAddr(id); err != nil {
		return err
	}
	if err := b.raft.RemoveServer(raft.ServerID(id), 0, timeoutOf(ctx)).Error(); err != nil {
		return fmt.Errorf("%w: remove server: %w", httpapi.ErrOutcomeUnknown, err)
	}
	return nil
}
