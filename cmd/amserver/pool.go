package main

import (
	"context"
	"fmt"
	"iter"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/amserver/amserver/api"
)

func newPoolCmd(a *app) *cobra.Command {
	cmd := makeGroup(&cobra.Command{
		Use:   "pool",
		Short: "List, create, update and delete pools",
	})
	cmd.AddCommand(newPoolListCmd(a), newPoolStatusCmd(a), newPoolApplyCmd(a), newPoolDeleteCmd(a))
	return cmd
}

func newPoolListCmd(a *app) *cobra.Command {
	return listCmd[api.Pool]{
		Short: "List pools with their usage against their caps",
		Kind:  "pools",
		Walk: func(ctx context.Context, c *api.Client, o api.ListOptions, q *api.QueryOptions) iter.Seq2[api.Pool, error] {
			return c.ListPools(ctx, o, q)
		},
		Paged: true, Variable: "pool",
		Columns:     []string{"NAME", "KIND", "SCORING", "TIERS", "CAPACITY", "CORES", "DEFAULTS"},
		Row:         poolRow,
		WideColumns: []string{"MEMORY", "GROUP", "NODES", "MODIFIED"},
		WideRow: func(p api.Pool, _ time.Time) []string {
			nodes := "-"
			if p.Kind == api.PoolElastic {
				nodes = fmt.Sprintf("%d-%d (warm %d)", p.MinNodes, p.MaxNodes, p.Warm)
			}
			return []string{capped(float64(p.Usage.MemoryMiB), float64(p.Caps.MaxMemoryMiB), "MiB"), orDash(clean(p.CapGroup)), nodes, strconv.FormatUint(p.ModifyIndex, 10)}
		},
	}.build(a)
}

func poolRow(p api.Pool, _ time.Time) []string {
	defaults := fmt.Sprintf("capacity=%s cores=%d", qty(p.Defaults.Capacity), p.Defaults.Cores)
	if p.Defaults.MemoryMiB > 0 {
		defaults += fmt.Sprintf(" memoryMiB=%d", p.Defaults.MemoryMiB)
	}
	return []string{p.Name, orDefault(p.Kind, api.PoolCluster), orDefault(p.Scoring, api.ScoringBinpack), tiers(p.Tiers),
		capped(p.Usage.Capacity, p.Caps.MaxCapacity, "cap"), capped(float64(p.Usage.Cores), float64(p.Caps.MaxCores), "cores"), defaults}
}

// capped prints usage against a ceiling, where a zero ceiling means none.
func capped(used, ceiling float64, unit string) string {
	if ceiling == 0 {
		return qty(used) + "/unlimited " + unit
	}
	return frac(used, ceiling, unit)
}

func tiers(ts []api.Tier) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = t.Name + "(" + t.Cloud + ")"
	}
	return list(parts)
}

func newPoolApplyCmd(a *app) *cobra.Command {
	var p api.Pool
	return clientCmd[*api.Pool]{
		Use:     "apply FILE|-",
		Short:   "Create or replace a pool from a JSON or YAML file",
		Args:    cobra.ExactArgs(1),
		Prepare: a.fileInput("pool", &p, func() string { return p.Name }, "has no name"),
		Kind:    "pool",
		Call: func(ctx context.Context, c *api.Client, _ []string) (*api.Pool, error) {
			return c.PutPool(ctx, p)
		},
		Sentence: func(name string, stored *api.Pool) string {
			return fmt.Sprintf("pool %q applied (kind %s, modify index %s)",
				name, clean(orDefault(stored.Kind, api.PoolCluster)), strconv.FormatUint(stored.ModifyIndex, 10))
		},
	}.build(a)
}

func newPoolDeleteCmd(a *app) *cobra.Command {
	return removeCmd(a, "delete NAME", "Delete a pool that no node, bundle or service uses", "pool", "pool %q deleted",
		(*api.Client).DeletePool)
}
