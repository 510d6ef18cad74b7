package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/amserver/amserver/api"
)

func newCapsCmd(a *app) *cobra.Command {
	cmd := makeGroup(&cobra.Command{
		Use:   "caps",
		Short: "Show and set the cluster-wide caps and cap groups",
		Long: "Cluster-wide caps bound what every reservation of the cluster holds together; a cap\n" +
			"group's bound the pools that joined it (a pool's capGroup field). 0 means no cap.",
	})
	cmd.AddCommand(newCapsGetCmd(a), newCapsSetCmd(a))
	return cmd
}

func newCapsGetCmd(a *app) *cobra.Command {
	return clientCmd[*api.ClusterCaps]{
		Use:   "get",
		Short: "Show the cluster's and every cap group's caps, usage and pools",
		Args:  cobra.NoArgs,
		Kind:  "caps",
		Call: func(ctx context.Context, c *api.Client, _ []string) (*api.ClusterCaps, error) {
			caps, _, err := c.Caps(ctx, a.query())
			return caps, err
		},
		Text: printCaps,
	}.build(a)
}

// capsFlags are `caps set` without a file.
type capsFlags struct {
	maxCapacity float64
	maxCores    int
	groups      []string
}

func newCapsSetCmd(a *app) *cobra.Command {
	var f capsFlags
	var in api.ClusterCaps
	return clientCmd[*api.ClusterCaps]{
		Use:   "set [FILE|-]",
		Short: "Replace the cluster's caps and cap groups, from flags or a JSON or YAML file",
		Long: "Replace the cluster-wide caps and every cap group's: a group left out has no caps.\n" +
			"With FILE, the body of PUT /v1/caps ({maxCapacity, maxCores, groups: {NAME: {...}}});\n" +
			"else the flags, e.g. --max-capacity 1000 --group rack-7=200:0 (capacity:cores).",
		Args: cobra.MaximumNArgs(1),
		Flags: func(fl *pflag.FlagSet) {
			fl.Float64Var(&f.maxCapacity, "max-capacity", 0, "the cluster's capacity cap (0 = none)")
			fl.IntVar(&f.maxCores, "max-cores", 0, "the cluster's cores cap (0 = none)")
			fl.StringArrayVar(&f.groups, "group", nil, "a cap group NAME=CAPACITY:CORES (repeatable)")
		},
		Prepare: func(args []string) (string, error) {
			if len(args) == 1 {
				if f.maxCapacity != 0 || f.maxCores != 0 || len(f.groups) > 0 {
					return "", usagef("give either FILE or flags, not both")
				}
				return "", a.readInput(args[0], "caps", &in)
			}
			caps, err := f.caps()
			in = caps
			return "", err
		},
		Kind: "caps",
		Call: func(ctx context.Context, c *api.Client, _ []string) (*api.ClusterCaps, error) {
			return c.SetCaps(ctx, in)
		},
		Sentence: func(_ string, stored *api.ClusterCaps) string {
			return fmt.Sprintf("caps set (cluster capacity %s, cores %s; %d cap groups with caps; modify index %d)",
				unlimited(stored.MaxCapacity), unlimited(float64(stored.MaxCores)), cappedGroups(stored), stored.ModifyIndex)
		},
	}.build(a)
}

// caps builds the body from the flags; a malformed --group is a usage error.
func (f *capsFlags) caps() (api.ClusterCaps, error) {
	out := api.ClusterCaps{MaxCapacity: f.maxCapacity, MaxCores: f.maxCores}
	for _, g := range f.groups {
		name, limits, ok := strings.Cut(g, "=")
		capText, coresText, ok2 := strings.Cut(limits, ":")
		capacity, err1 := strconv.ParseFloat(capText, 64)
		cores, err2 := strconv.Atoi(coresText)
		if !ok || !ok2 || name == "" || err1 != nil || err2 != nil {
			return out, usagef("--group %q: want NAME=CAPACITY:CORES, e.g. rack-7=200:0", g)
		}
		if out.Groups == nil {
			out.Groups = map[string]api.CapGroup{}
		}
		if _, dup := out.Groups[name]; dup {
			return out, usagef("--group %q: group %q given twice", g, name)
		}
		out.Groups[name] = api.CapGroup{MaxCapacity: capacity, MaxCores: cores}
	}
	return out, nil
}

func unlimited(v float64) string {
	if v == 0 {
		return "unlimited"
	}
	return qty(v)
}

func cappedGroups(c *api.ClusterCaps) int {
	n := 0
	for _, g := range c.Groups {
		if g.MaxCapacity != 0 || g.MaxCores != 0 {
			n++
		}
	}
	return n
}

// printCaps is `caps get`: one line for the cluster, then one per group.
func printCaps(w io.Writer, c *api.ClusterCaps) error {
	t := newTable(w)
	t.row("SCOPE", "CAPACITY", "CORES", "POOLS")
	used := func(u *api.PoolUsage) api.PoolUsage {
		if u == nil {
			return api.PoolUsage{}
		}
		return *u
	}
	u := used(c.Usage)
	t.row("cluster", capped(u.Capacity, c.MaxCapacity, "cap"), capped(float64(u.Cores), float64(c.MaxCores), "cores"), "(all)")
	for _, name := range slices.Sorted(maps.Keys(c.Groups)) {
		g := c.Groups[name]
		gu := used(g.Usage)
		t.row("group/"+clean(name), capped(gu.Capacity, g.MaxCapacity, "cap"), capped(float64(gu.Cores), float64(g.MaxCores), "cores"),
			list(g.Pools))
	}
	return t.flush()
}
