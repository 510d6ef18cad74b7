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
	maxMemory   int64
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
			"else the flags, e.g. --max-capacity 1000 --group rack-7=200:0 (capacity:cores[:memoryMiB]).",
		Args: cobra.MaximumNArgs(1),
		Flags: func(fl *pflag.FlagSet) {
			fl.Float64Var(&f.maxCapacity, "max-capacity", 0, "the cluster's capacity cap (0 = none)")
			fl.IntVar(&f.maxCores, "max-cores", 0, "the cluster's cores cap (0 = none)")
			fl.Int64Var(&f.maxMemory, "max-memory-mib", 0, "the cluster's memory cap in MiB (0 = none)")
			fl.StringArrayVar(&f.groups, "group", nil, "a cap group NAME=CAPACITY:CORES[:MEMORY_MIB] (repeatable)")
		},
		Prepare: func(args []string) (string, error) {
			if len(args) == 1 {
				if f.maxCapacity != 0 || f.maxCores != 0 || f.maxMemory != 0 || len(f.groups) > 0 {
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
	out := api.ClusterCaps{PoolCaps: api.PoolCaps{MaxCapacity: f.maxCapacity, MaxCores: f.maxCores, MaxMemoryMiB: f.maxMemory}}
	for _, g := range f.groups {
		name, caps, ok := groupFlag(g)
		if !ok {
			return out, usagef("--group %q: want NAME=CAPACITY:CORES[:MEMORY_MIB], e.g. rack-7=200:0", g)
		}
		if out.Groups == nil {
			out.Groups = map[string]api.CapGroup{}
		}
		if _, dup := out.Groups[name]; dup {
			return out, usagef("--group %q: group %q given twice", g, name)
		}
		out.Groups[name] = api.CapGroup{PoolCaps: caps}
	}
	return out, nil
}

// groupFlag parses one --group NAME=CAPACITY:CORES[:MEMORY_MIB].
func groupFlag(g string) (string, api.PoolCaps, bool) {
	name, limits, ok := strings.Cut(g, "=")
	parts := strings.Split(limits, ":")
	if !ok || name == "" || len(parts) < 2 || len(parts) > 3 {
		return "", api.PoolCaps{}, false
	}
	capacity, err1 := strconv.ParseFloat(parts[0], 64)
	cores, err2 := strconv.Atoi(parts[1])
	var memory int64
	var err3 error
	if len(parts) == 3 {
		memory, err3 = strconv.ParseInt(parts[2], 10, 64)
	}
	if err1 != nil || err2 != nil || err3 != nil {
		return "", api.PoolCaps{}, false
	}
	return name, api.PoolCaps{MaxCapacity: capacity, MaxCores: cores, MaxMemoryMiB: memory}, true
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
		if g.PoolCaps != (api.PoolCaps{}) {
			n++
		}
	}
	return n
}

// printCaps is `caps get`: one line for the cluster, then one per group.
func printCaps(w io.Writer, c *api.ClusterCaps) error {
	t := newTable(w)
	t.row("SCOPE", "CAPACITY", "CORES", "MEMORY", "POOLS")
	used := func(u *api.PoolUsage) api.PoolUsage {
		if u == nil {
			return api.PoolUsage{}
		}
		return *u
	}
	u := used(c.Usage)
	t.row("cluster", capped(u.Capacity, c.MaxCapacity, "cap"), capped(float64(u.Cores), float64(c.MaxCores), "cores"),
		capped(float64(u.MemoryMiB), float64(c.MaxMemoryMiB), "MiB"), "(all)")
	for _, name := range slices.Sorted(maps.Keys(c.Groups)) {
		g := c.Groups[name]
		gu := used(g.Usage)
		t.row("group/"+clean(name), capped(gu.Capacity, g.MaxCapacity, "cap"), capped(float64(gu.Cores), float64(g.MaxCores), "cores"),
			capped(float64(gu.MemoryMiB), float64(g.MaxMemoryMiB), "MiB"), list(g.Pools))
	}
	return t.flush()
}
