package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/amserver/amserver/api"
)

func newNodeCmd(a *app) *cobra.Command {
	cmd := makeGroup(&cobra.Command{
		Use:   "node",
		Short: "Inspect nodes and control their scheduling",
	})
	cmd.AddCommand(newNodeListCmd(a), newNodeStatusCmd(a),
		newNodeActionCmd(a, "cordon", "Stop new placements on a node", "node %q cordoned: no new placements",
			(*api.Client).Cordon),
		newNodeActionCmd(a, "uncordon", "Allow placements on a node again (ends a drain)", "node %q uncordoned",
			(*api.Client).Uncordon),
		newNodeActionCmd(a, "drain", "Cordon a node and move its jobs away", "node %q is draining: its jobs are being moved away",
			(*api.Client).Drain),
		newNodeDeregisterCmd(a))
	return cmd
}

func newNodeListCmd(a *app) *cobra.Command {
	var f api.NodeFilter
	return listCmd[api.NodeSummary]{
		Short: "List nodes, page by page as the servers answer",
		Kind:  "nodes",
		Flags: func(fl *pflag.FlagSet) {
			fl.StringVar(&f.Pool, "pool", "", "only nodes of this pool")
			fl.StringVar(&f.Status, "status", "", "only nodes with this status (ready, suspect, down, left)")
		},
		Walk: func(ctx context.Context, c *api.Client, o api.ListOptions, q *api.QueryOptions) iter.Seq2[api.NodeSummary, error] {
			return c.ListNodes(ctx, f, o, q)
		},
		Paged: true, Variable: "node",
		Columns: []string{"ID", "POOL", "STATUS", "SCHEDULING", "AZ", "CLOUD", "TIER", "CAPACITY", "CORES", "GPU",
			"ASSIGNMENTS", "LAST SEEN"},
		Row:         nodeRow,
		WideColumns: []string{"MEMORY", "OTHER LABELS", "MODIFIED"},
		WideRow: func(n api.NodeSummary, _ time.Time) []string {
			return []string{memoryUse(n.ReservedMemoryMiB, n.TotalMemoryMiB), kv(otherLabels(n.Labels)), strconv.FormatUint(n.ModifyIndex, 10)}
		},
	}.build(a)
}

// nodeRow is a node's line in `node list`.
func nodeRow(n api.NodeSummary, now time.Time) []string {
	sched := scheduling(api.Node{Status: n.Status, Cordoned: n.Cordoned, Draining: n.Draining, OutsideTiers: n.OutsideTiers})
	gpu := "-"
	if n.GPUCapacity > 0 {
		gpu = frac(n.ReservedGPU, n.GPUCapacity, "")
	}
	return []string{n.ID, n.Pool, n.Status, sched, orDash(n.Labels["az"]), orDash(n.Labels["cloud"]), orDash(n.Tier),
		frac(n.ReservedCapacity, n.Allocatable, "cap"), fmt.Sprintf("%d/%d", n.ReservedCores, n.TotalCores),
		gpu, strconv.Itoa(n.Assignments), ago(n.LastSeen, now)}
}

// otherLabels are the labels besides the failure-domain keys.
func otherLabels(labels map[string]string) map[string]string {
	out := maps.Clone(labels)
	for _, k := range []string{"az", "cloud", "pool"} {
		delete(out, k)
	}
	return out
}

// scheduling says whether new placements may come to the node: the
// operator's marks first (they outlast an outage), then its status, since
// placement takes only ready nodes (DESIGN §3.1, stage placeable), and
// only nodes of a tier when the pool has tiers.
func scheduling(n api.Node) string {
	switch {
	case n.Draining:
		return "draining"
	case n.Cordoned:
		return "cordoned"
	case n.Status != api.NodeReady, n.OutsideTiers:
		return "ineligible"
	}
	return "eligible"
}

// tierText is a node's tier, or why it has none that placement uses.
func tierText(n *api.Node) string {
	if n.OutsideTiers {
		return "none: its cloud (" + orDash(n.Labels["cloud"]) + ") is in none of pool " + n.Pool + "'s tiers, so nothing is placed here"
	}
	return orDash(n.Tier)
}

// nodeStatus is the answer of `node status`: the node, and for the text
// form only, a way to read what it runs.
type nodeStatus struct {
	node        *api.Node
	assignments func() ([]api.Assignment, error)
}

func newNodeStatusCmd(a *app) *cobra.Command {
	var require string
	return clientCmd[nodeStatus]{
		Use:      "status ID",
		Complete: a.completeNodes(),
		Short:    "Show a node: inventory, runtimes, allocatable vs reserved, labels, taints, assignments",
		Args:     cobra.ExactArgs(1),
		Flags: func(fl *pflag.FlagSet) {
			fl.StringVar(&require, "require", "",
				"exit 1 unless the node has this status (ready, suspect, down, left): a worker's healthcheck")
		},
		Kind: "node",
		Call: func(ctx context.Context, c *api.Client, args []string) (nodeStatus, error) {
			n, _, err := c.Node(ctx, args[0], a.query())
			if err != nil {
				return nodeStatus{}, err
			}
			if require != "" && n.Status != require {
				// A healthcheck asks exactly this; exit 1 with one sentence.
				return nodeStatus{}, sentence(errors.New(n.Status), "node %q is %s, not %s", n.ID, n.Status, require)
			}
			return nodeStatus{node: n, assignments: func() ([]api.Assignment, error) {
				assigned, _, err := c.Assignments(ctx, n.ID, a.query())
				return assigned, err
			}}, nil
		},
		JSON: func(_ string, v nodeStatus) any { return v.node },
		Text: func(w io.Writer, v nodeStatus) error {
			if err := printNode(w, v.node, time.Now()); err != nil {
				return err
			}
			// a.err is the command's stderr (the root's, which it inherits).
			return a.printAssignments(w, a.err, v)
		},
	}.build(a)
}

func printNode(w io.Writer, n *api.Node, now time.Time) error {
	t := newTable(w)
	t.row("ID", n.ID)
	t.row("Pool", n.Pool)
	t.row("Status", n.Status)
	t.row("Scheduling", scheduling(*n))
	t.row("Tier", tierText(n))
	t.row("Last seen", ago(n.LastSeen, now))
	t.row("Labels", kv(n.Labels))
	t.row("Taints", list(n.Taints))
	t.row("Runtimes", nodeRuntimes(n))
	t.row("Capacity", fmt.Sprintf("%s reserved (total %s, utilization cap %s)",
		frac(n.Reserved.Capacity, n.Allocatable, "cap"), qty(n.TotalCapacity), qty(utilizationCap(n.UtilizationCap))))
	t.row("Cores", fmt.Sprintf("%d/%d reserved, pinned %s", n.Reserved.Cores, n.TotalCores, coreSet(n.Reserved.CoreSet)))
	memory := memoryUse(n.Reserved.MemoryMiB, n.TotalMemoryMiB) + " reserved"
	if n.TotalMemoryMiB == 0 {
		memory = "none registered: takes no job that requests memory"
	}
	t.row("Memory", memory)
	t.row("Index", fmt.Sprintf("created %d, modified %d", n.CreateIndex, n.ModifyIndex))
	if err := t.flush(); err != nil {
		return err
	}
	printNodeGPUs(w, n)
	printNodeCapabilities(w, n)
	return nil
}

// nodeRuntimes says what placement lets the node run (DESIGN §2 Node):
// an explain's runtime stage names them, so the operator must see them.
func nodeRuntimes(n *api.Node) string {
	out := "none listed: runs exec jobs"
	if len(n.Runtimes) > 0 {
		out = strings.Join(n.Runtimes, ", ")
	}
	if n.Kind != "" {
		out += " (kind " + n.Kind + ")"
	}
	return out
}

func utilizationCap(c float64) float64 {
	if c == 0 {
		return 1
	}
	return c
}

func printNodeGPUs(w io.Writer, n *api.Node) {
	if len(n.GPUs) == 0 {
		return
	}
	reserved := map[int]api.GPUReserved{}
	for _, g := range n.Reserved.GPUs {
		reserved[g.Index] = g
	}
	fmt.Fprintln(w, "\nGPUs")
	t := newTable(w)
	t.row("INDEX", "MODEL", "RESERVED", "EXCLUSIVE")
	for _, g := range n.GPUs {
		r := reserved[g.Index]
		held := r.Capacity
		if r.Exclusive {
			held = g.TotalCapacity // an exclusive hold books no share but takes the device
		}
		t.row(strconv.Itoa(g.Index), orDash(g.Model), frac(held, g.TotalCapacity, ""), yesNo(r.Exclusive))
	}
	_ = t.flush() // a failed terminal write has no one to report to
}

func printNodeCapabilities(w io.Writer, n *api.Node) {
	if len(n.Capabilities) == 0 {
		return
	}
	reserved := map[string]int64{}
	for _, c := range n.Reserved.Capabilities {
		reserved[c.Name] = c.Count
	}
	fmt.Fprintln(w, "\nCapabilities")
	t := newTable(w)
	t.row("NAME", "RESERVED", "ATTRIBUTES")
	for _, c := range n.Capabilities {
		t.row(c.Name, fmt.Sprintf("%d/%d", reserved[c.Name], c.Count), kv(c.Attributes))
	}
	_ = t.flush() // a failed terminal write has no one to report to
}

// printAssignments lists what the node runs. The node itself was printed
// already, so a failure to read them is a warning rather than the
// command's error.
func (a *app) printAssignments(w, errw io.Writer, v nodeStatus) error {
	assigned, err := v.assignments()
	if err != nil {
		fmt.Fprintf(errw, "warning: cannot list the assignments of node %q: %s\n", v.node.ID, a.describe(err))
		return nil
	}
	if len(assigned) == 0 {
		fmt.Fprintln(w, "\nAssignments: none")
		return nil
	}
	fmt.Fprintln(w, "\nAssignments")
	t := newTable(w)
	t.row("ID", "OWNER", "JOB", "ROLE", "EPOCH", "DESIRED", "STATUS", "CAPACITY", "MEMORY", "CORES", "GPU")
	for _, as := range assigned {
		owner := "bundle " + as.BundleID
		if as.ServiceID != "" {
			owner = "service " + as.ServiceID
		}
		gpu := gpuPlacement(api.JobPlacement{GPU: as.GPU, GPUs: as.GPUs})
		t.row(as.ID, owner, as.Job, orDash(as.Role), strconv.FormatUint(as.Epoch, 10), as.Desired,
			orDash(as.Status), qty(as.Capacity), memoryRequest(as.MemoryMiB, as.MemoryLimitMiB), coreSet(as.Cores), gpu)
	}
	if err := t.flush(); err != nil {
		return err
	}
	// Why an assignment failed, from its worker: under the table, as a
	// bundle's job messages are.
	heading := "\nMessages"
	for _, as := range assigned {
		if as.Message == "" {
			continue
		}
		if heading != "" {
			fmt.Fprintln(w, heading)
			heading = ""
		}
		printMessage(w, fmt.Sprintf("%s (%s)", clean(as.ID), clean(orDash(as.Status))), as.Message)
	}
	return nil
}

type nodeAction func(*api.Client, context.Context, string) (*api.Node, error)

// newNodeActionCmd declares cordon, uncordon and drain; done is a format
// with one %q for the node's id.
func newNodeActionCmd(a *app, name, short, done string, action nodeAction) *cobra.Command {
	return clientCmd[*api.Node]{
		Use:      name + " ID",
		Complete: a.completeNodes(),
		Short:    short,
		Args:     cobra.ExactArgs(1),
		Kind:     "node",
		Call: func(ctx context.Context, c *api.Client, args []string) (*api.Node, error) {
			return action(c, ctx, args[0])
		},
		Sentence: func(id string, _ *api.Node) string { return fmt.Sprintf(done, id) },
	}.build(a)
}

func newNodeDeregisterCmd(a *app) *cobra.Command {
	var force bool
	return clientCmd[noBody]{
		Use:      "deregister ID",
		Complete: a.completeNodes(),
		Short:    "Remove a node from the cluster (refused while it holds jobs, unless --force)",
		Args:     cobra.ExactArgs(1),
		Flags: func(fl *pflag.FlagSet) {
			fl.BoolVar(&force, "force", false, "deregister even though jobs are assigned (they are re-placed)")
		},
		Kind: "node",
		Call: func(ctx context.Context, c *api.Client, args []string) (noBody, error) {
			return noBody{}, c.DeregisterNode(ctx, args[0], force)
		},
		Done:     "deregistered",
		Sentence: func(id string, _ noBody) string { return fmt.Sprintf("node %q deregistered", id) },
	}.build(a)
}
