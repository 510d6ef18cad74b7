package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/amserver/amserver/api"
)

func newMembersCmd(a *app) *cobra.Command {
	return listCmd[api.Member]{
		Use:   "members",
		Short: "List the gossip members (servers and workers) the server sees",
		Kind:  "members",
		// Gossip membership is the answering server's own view: no --stale,
		// and no paging.
		Walk:    pages(func(ctx context.Context, c *api.Client) ([]api.Member, error) { return c.Members(ctx) }),
		Columns: []string{"NAME", "ADDRESS", "ROLE", "STATUS", "AZ", "CLOUD", "POOL", "OTHER LABELS", "LAST SEEN"},
		Row: func(m api.Member, now time.Time) []string {
			return []string{m.Name, m.Address, m.Role, m.Status, orDash(m.Labels["az"]), orDash(m.Labels["cloud"]),
				orDash(m.Labels["pool"]), kv(otherLabels(m.Labels)), ago(m.LastSeen, now)}
		},
		WideColumns: []string{"RAFT", "HTTP", "SINCE"},
		WideRow: func(m api.Member, now time.Time) []string {
			return []string{orDash(m.RaftAddr), orDash(m.HTTPAddr), ago(m.Since, now)}
		},
	}.build(a)
}

// clusterStatus is the --json shape of `status`: the two API answers it
// is made of, under their own names.
type clusterStatus struct {
	Address string      `json:"address"`
	Health  *api.Health `json:"health"`
	Leader  *api.Leader `json:"leader"`
}

func newStatusCmd(a *app) *cobra.Command {
	return clientCmd[*clusterStatus]{
		Use:   "status",
		Short: "Show the server's health and the cluster leader (exit 1 without a leader)",
		Args:  cobra.NoArgs,
		// No retries: a status check should report "no leader", not wait
		// for an election to finish.
		Options: []api.Option{api.WithMaxRetries(0)},
		Call:    clusterStatusOf,
		Text:    printStatus,
		Verdict: func(_ string, st *clusterStatus) error {
			if st.Leader == nil {
				return sentence(errors.New("no leader"), "the cluster has no leader")
			}
			return nil
		},
	}.build(a)
}

// clusterStatusOf reads the server's health, and the leader it knows of.
func clusterStatusOf(ctx context.Context, c *api.Client, _ []string) (*clusterStatus, error) {
	st := &clusterStatus{Address: c.Address()}
	var err error
	if st.Health, err = c.Health(ctx); err != nil {
		return nil, about(err, "server health", "")
	}
	if st.Health.KnownLeader {
		st.Leader, err = c.Leader(ctx)
		if err != nil && !api.IsCode(err, api.CodeNoLeader) {
			return nil, about(err, "leader", "")
		}
	}
	return st, nil
}

func printStatus(w io.Writer, st *clusterStatus) error {
	h := st.Health
	role := "follower"
	if h.IsLeader {
		role = "leader"
	}
	t := newTable(w)
	t.row("Server", fmt.Sprintf("%s (id %s, %s)", st.Address, orDash(h.ID), role))
	t.row("Health", orDash(h.Status))
	if l := st.Leader; l != nil {
		t.row("Leader", fmt.Sprintf("%s (raft %s, http %s)", orDash(l.ID), orDash(l.RaftAddr), orDash(l.HTTPAddr)))
	} else {
		t.row("Leader", "none known (an election is running, or quorum is lost)")
	}
	t.row("Raft peers", strconv.Itoa(h.Peers))
	index := strconv.FormatUint(h.Index, 10)
	if h.Index == 0 {
		index += " (" + emptyState + ")"
	}
	t.row("Index", index)
	return t.flush()
}
