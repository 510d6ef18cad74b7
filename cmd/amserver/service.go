package main

import (
	"context"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/amserver/amserver/api"
)

func newServiceCmd(a *app) *cobra.Command {
	cmd := makeGroup(&cobra.Command{
		Use:   "service",
		Short: "Manage node services (eager: on every eligible node of their pools; lazy: where a bundle consumes what they provide)",
	})
	cmd.AddCommand(newServiceListCmd(a), newServiceApplyCmd(a), newServiceDeleteCmd(a), newServiceLogsCmd(a))
	return cmd
}

func newServiceListCmd(a *app) *cobra.Command {
	return listCmd[api.NodeService]{
		Short: "List node services",
		Kind:  "services",
		Walk: func(ctx context.Context, c *api.Client, o api.ListOptions, q *api.QueryOptions) iter.Seq2[api.NodeService, error] {
			return c.ListServices(ctx, o, q)
		},
		Paged: true, Variable: "service",
		Columns: []string{"ID", "POOLS", "LIFECYCLE", "REQUIRES", "CONSUMES", "PROVIDES", "DRIVER", "COMMAND"},
		Row: func(s api.NodeService, _ time.Time) []string {
			return []string{s.ID, list(s.Pools), orDefault(s.Lifecycle, "eager"), serviceRequires(s.Requirements),
				capabilityRequests(s.Consumes), capabilities(s.Provides), launchText(s.Launch), launchCommand(s.Launch)}
		},
		WideColumns: []string{"CONSTRAINTS", "MODIFIED"},
		WideRow: func(s api.NodeService, _ time.Time) []string {
			return []string{list(s.Constraints), strconv.FormatUint(s.ModifyIndex, 10)}
		},
	}.build(a)
}

// serviceRequires is what a service reserves on each node: "cap=0.5
// cores=1", "-" for nothing.
func serviceRequires(r api.ServiceRequirements) string {
	var parts []string
	if r.Capacity > 0 {
		parts = append(parts, "cap="+strconv.FormatFloat(r.Capacity, 'f', -1, 64))
	}
	if r.Cores > 0 {
		parts = append(parts, "cores="+strconv.Itoa(r.Cores))
	}
	if r.MemoryMiB > 0 {
		parts = append(parts, "mem="+strconv.FormatInt(r.MemoryMiB, 10)+"MiB")
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

func capabilities(cs []api.Capability) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s:%d", c.Name, c.Count)
	}
	return list(parts)
}

func newServiceApplyCmd(a *app) *cobra.Command {
	var s api.NodeService
	return clientCmd[*api.NodeService]{
		Use:     "apply FILE|-",
		Short:   "Create or replace a node service from a JSON or YAML file",
		Args:    cobra.ExactArgs(1),
		Prepare: a.fileInput("service", &s, func() string { return s.ID }, "has no id"),
		Kind:    "service",
		Call: func(ctx context.Context, c *api.Client, _ []string) (*api.NodeService, error) {
			return c.PutService(ctx, s)
		},
		Sentence: func(id string, stored *api.NodeService) string {
			return fmt.Sprintf("service %q applied (pools %s, modify index %d)", id, clean(list(stored.Pools)), stored.ModifyIndex)
		},
	}.build(a)
}

func newServiceDeleteCmd(a *app) *cobra.Command {
	return removeCmd(a, "delete ID", "Delete a node service and stop it everywhere", "service", "service %q deleted",
		(*api.Client).DeleteService)
}
