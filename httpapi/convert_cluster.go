package httpapi

import (
	"maps"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/raftstore"
)

func assignmentToAPI(a *fsm.Assignment) api.Assignment {
	out := api.Assignment{
		ID: a.ID, BundleID: a.BundleID, ServiceID: a.ServiceID, Job: a.Job, NodeID: a.NodeID,
		Role: a.Role, Epoch: a.Epoch, Desired: a.Desired, Status: a.Status, Message: a.Message,
		Launch: launchToAPI(a.Launch), Capacity: fromMilli(a.Grant.Capacity),
		CreateIndex: a.CreateIndex, ModifyIndex: a.ModifyIndex,
	}
	out.Cores, out.GPU, out.GPUs = grantDevices(a.Grant)
	return out
}

func eventToAPI(e fsm.Event) api.Event {
	return api.Event{Index: e.Index, Time: instant(e.Time), Type: e.Type, BundleID: e.BundleID,
		NodeID: e.NodeID, Message: e.Message}
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

func peersToAPI(list []raftstore.Peer) []api.Peer {
	out := make([]api.Peer, len(list))
	for i, p := range list {
		out[i] = api.Peer{ID: p.ID, Address: p.Address, Suffrage: p.Suffrage, Leader: p.Leader}
	}
	return out
}

func raftToAPI(id string, info raftstore.Info, leader raftstore.LeaderInfo, known bool) api.RaftConfiguration {
	out := api.RaftConfiguration{
		Servers: peersToAPI(info.Servers), ServerID: id, State: info.State, Term: info.Term,
		LastIndex: info.LastIndex, CommitIndex: info.CommitIndex, AppliedIndex: info.AppliedIndex,
		LastSnapshotIndex: info.LastSnapshotIndex, ConfigIndex: info.ConfigIndex,
	}
	if known {
		l := leaderToAPI(leader)
		out.Leader = &l
	}
	return out
}
