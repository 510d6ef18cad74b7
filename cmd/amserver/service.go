package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/amserver/amserver/api"
)

func newServiceCmd(a *app) *cobra.Command {
	cmd := makeGroup(&cobra.Command{
		Use:   "service",
		Short: "Manage node services (placed on every eligible node of their pools)",
	})
	cmd.AddCommand(newServiceListCmd(a), newServiceApplyCmd(a), newServiceDeleteCmd(a))
	return cmd
}

func newServiceListCmd(a *app) *cobra.Command {
	return newListCmd(a, "List node services", "services",
		func(ctx context.Context, c *api.Client, q *api.QueryOptions) ([]api.NodeService, error) {
			services, _, err := c.Services(ctx, q)
			return services, err
		}, printServiceList)
}

func printServiceList(w io.Writer, services []api.NodeService) error {
	t := newTable(w)
	t.row("ID", "POOLS", "LIFECYCLE", "CONSUMES", "PROVIDES", "DRIVER", "COMMAND")
	for _, s := range services {
		t.row(s.ID, list(s.Pools), orDefault(s.Lifecycle, "eager"), capabilityRequests(s.Consumes),
			capabilities(s.Provides), orDefault(s.Launch.Driver, api.DriverNone), orDash(strings.Join(s.Launch.Command, " ")))
	}
	return t.flush()
}

func capabilities(cs []api.Capability) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s:%d", c.Name, c.Count)
	}
	return list(parts)
}

func newServiceApplyCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "apply FILE|-",
		Short: "Create or replace a node service from a JSON or YAML file",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var s api.NodeService
			if err := a.readInput(args[0], "service", &s); err != nil {
				return err
			}
			if s.ID == "" {
				return usagef("service file %s has no id", displayName(args[0]))
			}
			c, ctx, cancel, err := a.connect(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			stored, err := c.PutService(ctx, s)
			if err != nil {
				return about(err, "service", s.ID)
			}
			if a.json {
				return printJSON(cmd.OutOrStdout(), stored)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "service %q applied (pools %s, modify index %d)\n",
				s.ID, clean(list(stored.Pools)), stored.ModifyIndex)
			return nil
		},
	}
}

func newServiceDeleteCmd(a *app) *cobra.Command {
	return newRemoveCmd(a, "delete ID", "Delete a node service and stop it everywhere", "service", "service %q deleted",
		(*api.Client).DeleteService)
}
