package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/amserver/amserver/api"
)

// completionTimeout keeps a tab press snappy when the server is slow or
// absent: completion then simply offers nothing.
const completionTimeout = 2 * time.Second

// completeIDs offers the ids fetch returns as the first argument of a
// command: one page of those starting with what is typed (a shell cannot
// show a hundred thousand anyway). Reads are stale: any server may answer,
// and no leader is needed.
func (a *app) completeIDs(fetch func(ctx context.Context, c *api.Client, prefix string) ([]string, error)) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, typed string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := a.client(cmd, api.WithMaxRetries(0))
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
		defer cancel()
		ids, err := fetch(ctx, c, typed)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return ids, cobra.ShellCompDirectiveNoFileComp
	}
}

var staleRead = &api.QueryOptions{Stale: true}

func (a *app) completeBundles() cobra.CompletionFunc {
	return a.completeIDs(func(ctx context.Context, c *api.Client, prefix string) ([]string, error) {
		bundles, _, err := c.BundlesPage(ctx, api.BundleFilter{}, api.ListOptions{Prefix: prefix}, staleRead)
		ids := make([]string, len(bundles))
		for i, b := range bundles {
			ids[i] = b.ID
		}
		return ids, err
	})
}

func (a *app) completeNodes() cobra.CompletionFunc {
	return a.completeIDs(func(ctx context.Context, c *api.Client, prefix string) ([]string, error) {
		nodes, _, err := c.NodesPage(ctx, api.NodeFilter{}, api.ListOptions{Prefix: prefix}, staleRead)
		ids := make([]string, len(nodes))
		for i, n := range nodes {
			ids[i] = n.ID
		}
		return ids, err
	})
}
