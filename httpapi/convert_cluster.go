package httpapi

import (
	"maps"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/internal/convert"
	"github.com/amserver/amserver/raftstore"
)

var (
	// An assignment's resources are read from its grant; the ledger slot
	// stays inside.
	assignmentPair = convert.MustPair[api.Assignment, fsm.Assignment](convert.Skip("Grant", "Capacity", "MemoryMiB", "Cores", "GPU", "GPUs", "ExitCode"))
	eventPair      = convert.MustPair[api.Event, fsm.Event]()
)

func assignmentToAPI(a *fsm.Assignment) api.Assignment {
	var out api.Assignment
	assignmentPair.ToAPI(&out, a)
	out.Capacity = convert.FromMilli(a.Grant.Capacity)
	out.MemoryMiB = a.Grant.MemoryMiB
	out.Cores, out.GPU, out.GPUs = grantDevices(a.Grant)
	if a.Status == fsm.JobExited || a.ExitCode != 0 {
		code := int(a.ExitCode)
		out.ExitCode = &code
	}
	return out
}

func eventToAPI(e fsm.Event) api.Event {
	var out api.Event
	eventPair.ToAPI(&out, &e)
	return out
}

func memberToAPI(m gossip.Member) api.Member {
	labels := maps.Clone(m.Meta.Tags)
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range map[string]string{"az": m.Meta.AZ, "cloud": m.Meta.Cloud, "pool": m.Meta.Pool} {
		if v != "" {
			labels[k] = v
		}
	}
	return api.Member{
		Name: m.Name, Address: m.Address(), Role: string(m.Meta.Role), Status: string(m.Status),
		Labels: labels, RaftAddr: m.Meta.RaftAddr, HTTPAddr: m.Meta.HTTPAddr,
		Since: m.Since.UTC(), LastSeen: m.LastSeen.UTC(),
	}
}

func leaderToAPI(l raftstore.LeaderInfo) api.Leader {
	return api.Leader{ID: l.ID, RaftAddr: l.RaftAddr, HTTPAddr: l.HTTPAddr}
}

// peersToAPI converts the Raft configuration; member is the answering
// server's gossip view, by name (a server's gossip name is its Raft id).
func peersToAPI(list []raftstore.Peer, member func(string) (gossip.Member, bool)) []api.Peer {
	out := make([]api.Peer, len(list))
	for i, p := range list {
		status := api.PeerUnknown
		if m, ok := member(p.ID); ok {
			status = string(m.Status)
		}
		out[i] = api.Peer{ID: p.ID, Address: p.Address, Suffrage: p.Suffrage, Leader: p.Leader, Status: status}
	}
	return out
}

func raftToAPI(id string, info raftstore.Info, leader raftstore.LeaderInfo, known bool, member func(string) (gossip.Member, bool)) api.RaftConfiguration {
	out := api.RaftConfiguration{
		Servers: peersToAPI(info.Servers, member), ServerID: id, State: info.State, Term: info.Term,
		LastIndex: info.LastIndex, CommitIndex: info.CommitIndex, AppliedIndex: info.AppliedIndex,
		LastSnapshotIndex: info.LastSnapshotIndex, ConfigIndex: info.ConfigIndex, LogStore: string(info.LogStore),
	}
	if known {
		l := leaderToAPI(leader)
		out.Leader = &l
	}
	return out
}
