package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/amserver/amserver/api"
)

// poolNodeStates are the columns of `pool status`, in lifecycle order.
var poolNodeStates = []string{api.LifecycleReady, api.LifecycleIdle, api.LifecycleSpawning, api.LifecycleDraining, api.LifecycleUnavailable}

func newPoolStatusCmd(a *app) *cobra.Command {
	return clientCmd[[]api.PoolStatus]{
		Use:   "status [NAME]",
		Short: "Show pools' nodes by state: ready, idle, spawning, draining, unavailable",
		Long: "Show one pool's nodes by state, or every pool's: ready (placeable, with work), idle\n" +
			"(placeable, nothing on it), spawning (asked of an elastic pool's provisioner, not\n" +
			"registered yet), draining (cordoned, draining or being given back) and unavailable.",
		Args: cobra.MaximumNArgs(1),
		// Kind is unset: poolStatuses names the pool each error is about.
		Call: func(ctx context.Context, c *api.Client, args []string) ([]api.PoolStatus, error) {
			return poolStatuses(ctx, c, a.query(), args)
		},
		// One pool asked for by name prints as one object, not a list.
		JSON: func(name string, list []api.PoolStatus) any {
			if name != "" && len(list) == 1 {
				return list[0]
			}
			return nonNil(list)
		},
		Text: func(w io.Writer, list []api.PoolStatus) error { return printPoolStatuses(w, list, time.Now()) },
	}.build(a)
}

// poolStatuses fetches the named pool's status, or every pool's.
func poolStatuses(ctx context.Context, c *api.Client, q *api.QueryOptions, args []string) ([]api.PoolStatus, error) {
	names := args
	if len(names) == 0 {
		pools, _, err := c.Pools(ctx, q)
		if err != nil {
			return nil, about(err, "pools", "")
		}
		for _, p := range pools {
			names = append(names, p.Name)
		}
	}
	out := make([]api.PoolStatus, 0, len(names))
	for _, name := range names {
		ps, _, err := c.PoolStatus(ctx, name, q)
		if err != nil {
			return nil, about(err, "pool", name)
		}
		out = append(out, *ps)
	}
	return out, nil
}

// printPoolStatuses prints a summary row per pool, then each pool's nodes.
func printPoolStatuses(w io.Writer, list []api.PoolStatus, now time.Time) error {
	t := newTable(w)
	t.row(append([]string{"POOL", "KIND"}, upperAll(poolNodeStates)...)...)
	for _, ps := range list {
		row := []string{ps.Pool, orDefault(ps.Kind, api.PoolCluster)}
		for _, s := range poolNodeStates {
			row = append(row, strconv.Itoa(ps.Counts[s]))
		}
		t.row(row...)
	}
	if err := t.flush(); err != nil {
		return err
	}
	for _, ps := range list {
		if len(ps.Nodes) == 0 {
			continue
		}
		fmt.Fprintf(w, "\nPool %s", ps.Pool)
		if ps.Kind == api.PoolElastic {
			fmt.Fprintf(w, " (minNodes %d, maxNodes %s, warm %d; %d provisioned cluster-wide)",
				ps.MinNodes, orUnlimited(ps.MaxNodes), ps.Warm, ps.Provisioned)
		}
		fmt.Fprintln(w)
		nt := newTable(w)
		nt.row("NODE", "STATE", "STATUS", "INSTANCE TYPE", "REQUEST", "SINCE")
		for _, n := range ps.Nodes {
			nt.row(n.NodeID, n.State, orDash(n.Status), orDash(n.InstanceType), orDash(n.RequestID), ago(n.Since, now))
		}
		if err := nt.flush(); err != nil {
			return err
		}
	}
	return nil
}

func upperAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = strings.ToUpper(s)
	}
	return out
}

func orUnlimited(n int) string {
	if n == 0 {
		return "unlimited"
	}
	return strconv.Itoa(n)
}
