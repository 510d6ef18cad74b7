package agent

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/httpapi"
	"github.com/amserver/amserver/raftstore"
	"github.com/amserver/amserver/scheduler"
)

// backend adapts the server to what the HTTP API declares it needs: the
// Raft store does most of it.
type backend struct {
	*raftstore.Store
	srv *Server
}

var _ httpapi.Backend = (*backend)(nil)

func (b *backend) ServerID() string { return b.srv.cfg.NodeID }

// Now is the leader's clock, stamped into commands.
func (b *backend) Now() time.Time { return b.srv.cfg.Clock.Now() }

func (b *backend) Members() []gossip.Member {
	if b.srv.gossip == nil {
		return nil
	}
	return b.srv.gossip.Members()
}

// Member is this server's gossip view of one member.
func (b *backend) Member(name string) (gossip.Member, bool) {
	if b.srv.gossip == nil {
		return gossip.Member{}, false
	}
	return b.srv.gossip.Member(name)
}

// ServersApply: whether every server applies commands of level.
func (b *backend) ServersApply(level int) bool { return b.srv.clusterApplies(level) }

func (b *backend) Plan(ctx context.Context, spec fsm.BundleSpec) (httpapi.PlanResult, error) {
	if err := b.ReadBarrier(ctx, raftstore.ReadDefault); err != nil {
		return httpapi.PlanResult{}, err
	}
	r := b.srv.engine.Plan(b.State(), spec, b.AppliedIndex())
	return httpapi.PlanResult{Bundle: r.Bundle, Explain: r.Explain, Evictions: evictionsToAPI(r.Victims)}, nil
}

// evictionsToAPI lists a plan's victims as the API shows them.
func evictionsToAPI(victims []scheduler.Victim) []api.PlanEviction {
	var out []api.PlanEviction
	for _, v := range victims {
		role := api.RoleBackup
		if v.Primary {
			role = api.RolePrimary
		}
		out = append(out, api.PlanEviction{BundleID: v.BundleID, Priority: v.Priority, Role: role, Promoted: v.Promoted, Jobs: v.Jobs})
	}
	return out
}

func (b *backend) RaftInfo(ctx context.Context) (raftstore.Info, error) { return b.Info(ctx) }

// RestoreSnapshot restores, then writes the configured ACL tokens the
// restored state lacks (a snapshot of a cluster without them): otherwise
// they would be back only at the next leader, and until then the operator
// who restored would be locked out.
func (b *backend) RestoreSnapshot(ctx context.Context, r io.Reader) error {
	if err := b.Store.RestoreSnapshot(ctx, r); err != nil {
		return err
	}
	if err := b.srv.leader.Prepare(ctx); err != nil {
		return fmt.Errorf("restored, but the configured ACL tokens were not written back: %w", err)
	}
	return nil
}
