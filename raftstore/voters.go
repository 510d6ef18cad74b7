package raftstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/fsm"
)

// Bootstrap starts a new cluster with exactly these voters (id → Raft
// address). A server with Raft state refuses (raft.ErrCantBootstrap),
// which is no error here: it is a member already.
func (s *Store) Bootstrap(voters map[string]string) error {
	ids := make([]string, 0, len(voters))
	for id := range voters {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	servers := make([]raft.Server, 0, len(ids))
	for _, id := range ids {
		servers = append(servers, raft.Server{ID: raft.ServerID(id), Address: raft.ServerAddress(voters[id]), Suffrage: raft.Voter})
	}
	err := s.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error()
	if err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
		return fmt.Errorf("raft bootstrap: %w", err)
	}
	return nil
}

// HasLeader reports whether this server knows a leader.
func (s *Store) HasLeader() bool { return s.raft.Leader() != "" }

// Voters is the Raft configuration: every server's id and address.
func (s *Store) Voters() (map[string]string, error) {
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, fmt.Errorf("raft configuration: %w", err)
	}
	out := map[string]string{}
	for _, srv := range f.Configuration().Servers {
		out[string(srv.ID)] = string(srv.Address)
	}
	return out, nil
}

// VoterCount is the number of voters in the configuration (0 when unknown).
func (s *Store) VoterCount() int {
	f := s.raft.GetConfiguration()
	if f.Error() != nil {
		return 0
	}
	n := 0
	for _, srv := range f.Configuration().Servers {
		if srv.Suffrage == raft.Voter {
			n++
		}
	}
	return n
}

// AddVoter adds a server, after checking its Raft certificate under mutual
// TLS. A probe that failed recently is not repeated (ErrProbeBackoff).
func (s *Store) AddVoter(id, addr string) error {
	if err := s.probeVoter(addr); err != nil {
		return err
	}
	if err := s.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, 10*time.Second).Error(); err != nil {
		return fmt.Errorf("add voter %s: %w", id, err)
	}
	return nil
}

// RemoveServer removes a server from the configuration.
func (s *Store) RemoveServer(id string) error {
	if err := s.raft.RemoveServer(raft.ServerID(id), 0, 10*time.Second).Error(); err != nil {
		return fmt.Errorf("remove server %s: %w", id, err)
	}
	return nil
}

// TransferLeadership hands leadership to server id ("" lets Raft pick).
// Refusals are certain: a target that cannot lead (fsm.ErrNotFound,
// fsm.ErrConflict) and what Raft turns away before starting. Only a
// transfer that started and then failed may still see the target elected.
func (s *Store) TransferLeadership(_ context.Context, id string) error {
	if !s.IsLeader() {
		return ErrNotLeader
	}
	target, err := s.transferTarget(id)
	if err != nil {
		return err
	}
	var f raft.Future
	if target == nil {
		f = s.raft.LeadershipTransfer()
	} else {
		f = s.raft.LeadershipTransferToServer(target.ID, target.Address)
	}
	if err := f.Error(); err != nil {
		return classifyTransferError(err)
	}
	return nil
}

// transferTarget is the voter id names (nil for ""). It checks here what
// Raft would refuse only in an error of its own wording, indistinguishable
// from a transfer that failed midway: itself, a nonvoter, no other voter.
func (s *Store) transferTarget(id string) (*raft.Server, error) {
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, fmt.Errorf("raft configuration: %w", err)
	}
	var target *raft.Server
	others := 0
	for _, srv := range f.Configuration().Servers {
		if string(srv.ID) == id {
			target = &srv
		}
		if srv.Suffrage == raft.Voter && srv.ID != raft.ServerID(s.cfg.NodeID) {
			others++
		}
	}
	switch {
	case id == s.cfg.NodeID:
		return nil, fmt.Errorf("%w: server %s is the leader already; name another voter", fsm.ErrConflict, id)
	case id != "" && target == nil:
		return nil, fmt.Errorf("server %s: %w", id, fsm.ErrNotFound)
	case target != nil && target.Suffrage != raft.Voter:
		return nil, fmt.Errorf("%w: server %s is not a voter, so it cannot lead", fsm.ErrConflict, id)
	case others == 0:
		return nil, fmt.Errorf("%w: there is no other voter to hand leadership to", fsm.ErrConflict)
	}
	return target, nil
}

// classifyTransferError: what Raft answers before it starts a transfer is
// certain; anything after (a timeout, a TimeoutNow that failed, maybe after
// arriving) may still end with the target leading.
func classifyTransferError(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader):
		return fmt.Errorf("%w: leadership transfer: %w", ErrNotLeader, err)
	case errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("%w: another leadership transfer is in progress: %w", fsm.ErrConflict, err)
	case errors.Is(err, raft.ErrEnqueueTimeout), errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%w: leadership transfer: %w", ErrNoLeader, err)
	}
	return fmt.Errorf("%w: leadership transfer: %w", ErrOutcomeUnknown, err)
}

// RemovePeer is the operator's removal of server id; an unknown id wraps
// fsm.ErrNotFound.
func (s *Store) RemovePeer(ctx context.Context, id string) error {
	if !s.IsLeader() {
		return ErrNotLeader
	}
	if _, err := s.serverAddr(id); err != nil {
		return err
	}
	if err := s.raft.RemoveServer(raft.ServerID(id), 0, timeoutOf(ctx)).Error(); err != nil {
		return fmt.Errorf("%w: remove server: %w", ErrOutcomeUnknown, err)
	}
	return nil
}

func (s *Store) serverAddr(id string) (raft.ServerAddress, error) {
	voters, err := s.Voters()
	if err != nil {
		return "", err
	}
	addr, ok := voters[id]
	if !ok {
		return "", fmt.Errorf("server %s: %w", id, fsm.ErrNotFound)
	}
	return raft.ServerAddress(addr), nil
}

// configIndex is the index of the committed configuration in effect: the
// last configuration entry the FSM applied, or the newest snapshot's when
// none has been since. Raft 1.7's Stats reads its configuration without
// the index, so its latest_configuration_index is always 0.
func (s *Store) configIndex() uint64 {
	idx := s.fsm.ConfigIndex()
	if metas, err := s.stores.Snaps.List(); err == nil && len(metas) > 0 {
		idx = max(idx, metas[0].ConfigurationIndex)
	}
	return idx
}

// Info is this server's view of Raft.
func (s *Store) Info(context.Context) (Info, error) {
	stats := s.raft.Stats()
	num := func(key string) uint64 {
		v, _ := strconv.ParseUint(stats[key], 10, 64)
		return v
	}
	info := Info{
		State: stateName(s.raft.State()), Term: num("term"), LastIndex: s.raft.LastIndex(),
		CommitIndex: s.raft.CommitIndex(), AppliedIndex: s.raft.AppliedIndex(),
		LastSnapshotIndex: num("last_snapshot_index"), ConfigIndex: s.configIndex(), LogStore: s.stores.Kind,
	}
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return info, fmt.Errorf("raft configuration: %w", err)
	}
	_, leader := s.raft.LeaderWithID()
	for _, srv := range f.Configuration().Servers {
		info.Servers = append(info.Servers, Peer{
			ID: string(srv.ID), Address: string(srv.Address), Suffrage: suffrageName(srv.Suffrage), Leader: srv.ID == leader,
		})
	}
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
