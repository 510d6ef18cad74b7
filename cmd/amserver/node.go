package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/amserver/amserver/api"
)

func newNodeCmd(a *app) *cobra.Command {
	cmd := makeGroup(&cobra.Command{
		Use:   "node",
		Short: "Inspect nodes and control their scheduling",
	})
	cmd.AddCommand(newNodeListCmd(a), newNodeStatusCmd(a),
		newNodeActionCmd(a, "cordon", "Stop new placements on a node", "node %q cordoned: no new placements\n",
			(*api.Client).Cordon),
		newNodeActionCmd(a, "uncordon", "Allow placements on a node again (ends a drain)", "node %q uncordoned\n",
			(*api.Client).Uncordon),
		newNodeActionCmd(a, "drain", "Cordon a node and move its jobs away", "node %q is draining: its jobs are being moved away\n",
			(*api.Client).Drain),
		newNodeDeregisterCmd(a))
	return cmd
}

func newNodeListCmd(a *app) *cobra.Command {
	var f api.NodeFilter
	cmd := newListCmd(a, "List nodes", "nodes",
		func(ctx context.Context, c *api.Client, q *api.QueryOptions) ([]api.Node, error) {
			nodes, _, err := c.Nodes(ctx, f, q)
			return nodes, err
		}, func(w io.Writer, nodes []api.Node) error { return printNodeList(w, nodes, time.Now()) })
	cmd.Flags().StringVar(&f.Pool, "pool", "", "only nodes of this pool")
	cmd.Flags().StringVar(&f.Status, "status", "", "only nodes with this status (ready, suspect, down, left)")
	return cmd
}

func printNodeList(w io.Writer, nodes []api.Node, now time.Time) error {
	t := newTable(w)
	t.row("ID", "POOL", "STATUS", "SCHEDULING", "AZ", "CLOUD", "TIER", "CAPACITY", "CORES", "GPU", "ASSIGNMENTS", "LAST SEEN")
	for _, n := range nodes {
		t.row(n.ID, n.Pool, n.Status, scheduling(n), orDash(n.Labels["az"]), orDash(n.Labels["cloud"]), orDash(n.Tier),
			frac(n.Reserved.Capacity, n.Allocatable, "cap"), fmt.Sprintf("%d/%d", n.Reserved.Cores, n.TotalCores),
			gpuUsage(n), strconv.Itoa(n.Assignments), ago(n.LastSeen, now))
	}
	return t.flush()
}

func scheduling(n api.Node) string {
	switch {
	case n.Draining:
		return "draining"
	case n.Cordoned:
		return "cordoned"
	}
	return "eligible"
}

// gpuUsage sums the reserved share over every device, e.g. "1.5/2".
func gpuUsage(n api.Node) string {
	if len(n.GPUs) == 0 {
		return "-"
	}
	var used, total float64
	for _, g := range n.GPUs {
		total += g.TotalCapacity
	}
	for _, g := range n.Reserved.GPUs {
		used += g.Capacity
	}
	return frac(used, total, "")
}

func newNodeStatusCmd(a *app) *cobra.Command {
	var require string
	cmd := &cobra.Command{
		Use:               "status ID",
		ValidArgsFunction: a.completeNodes(),
		Short:             "Show a node: inventory, allocatable vs reserved, labels, taints, assignments",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, cancel, err := a.connect(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			n, _, err := c.Node(ctx, args[0], a.query())
			if err != nil {
				return about(err, "node", args[0])
			}
			if require != "" && n.Status != require {
				// A healthcheck asks exactly this; exit 1 with one sentence.
				return fmt.Errorf("node %q is %s, not %s", n.ID, n.Status, require)
			}
			if a.json {
				return printJSON(cmd.OutOrStdout(), n)
			}
			w := cmd.OutOrStdout()
			if err := printNode(w, n, time.Now()); err != nil {
				return err
			}
			return a.printAssignments(ctx, c, w, cmd.ErrOrStderr(), n.ID)
		},
	}
	cmd.Flags().StringVar(&require, "require", "",
		"exit 1 unless the node has this status (ready, suspect, down, left): a worker's healthcheck")
	return cmd
}

func printNode(w io.Writer, n *api.Node, now time.Time) error {
	t := newTable(w)
	t.row("ID", n.ID)
	t.row("Pool", n.Pool)
	t.row("Status", n.Status)
	t.row("Scheduling", scheduling(*n))
	t.row("Tier", orDash(n.Tier))
	t.row("Last seen", ago(n.LastSeen, now))
	t.row("Labels", kv(n.Labels))
	t.row("Taints", list(n.Taints))
	t.row("Capacity", fmt.Sprintf("%s reserved (total %s, utilization cap %s)",
		frac(n.Reserved.Capacity, n.Allocatable, "cap"), qty(n.TotalCapacity), qty(utilizationCap(n.UtilizationCap))))
	t.row("Cores", fmt.Sprintf("%d/%d reserved, pinned %s", n.Reserved.Cores, n.TotalCores, coreSet(n.Reserved.CoreSet)))
	t.row("Index", fmt.Sprintf("created %d, modified %d", n.CreateIndex, n.ModifyIndex))
	if err := t.flush(); err != nil {
		return err
	}
	printNodeGPUs(w, n)
	printNodeCapabilities(w, n)
	return nil
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
		t.row(strconv.Itoa(g.Index), orDash(g.Model), frac(r.Capacity, g.TotalCapacity, ""), yesNo(r.Exclusive))
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
// already, so a failure here is a warning rather than the command's error.
func (a *app) printAssignments(ctx context.Context, c *api.Client, w, errw io.Writer, id string) error {
	assigned, _, err := c.Assignments(ctx, id, a.query())
	if err != nil {
		fmt.Fprintf(errw, "warning: cannot list the assignments of node %q: %s\n", id, a.describe(err))
		return nil
	}
	if len(assigned) == 0 {
		fmt.Fprintln(w, "\nAssignments: none")
		return nil
	}
	fmt.Fprintln(w, "\nAssignments")
	t := newTable(w)
	t.row("ID", "OWNER", "JOB", "ROLE", "EPOCH", "DESIRED", "STATUS", "CAPACITY", "CORES", "GPU")
	for _, as := range assigned {
		owner := "bundle " + as.BundleID
		if as.ServiceID != "" {
			owner = "service " + as.ServiceID
		}
		gpu := gpuPlacement(api.JobPlacement{GPU: as.GPU, GPUs: as.GPUs})
		t.row(as.ID, owner, as.Job, orDash(as.Role), strconv.FormatUint(as.Epoch, 10), as.Desired,
			orDash(as.Status), qty(as.Capacity), coreSet(as.Cores), gpu)
	}
	return t.flush()
}

type nodeAction func(*api.Client, context.Context, string) (*api.Node, error)

func newNodeActionCmd(a *app, name, short, done string, action nodeAction) *cobra.Command {
	return &cobra.Command{
		Use:               name + " ID",
		ValidArgsFunction: a.completeNodes(),
		Short:             short,
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, cancel, err := a.connect(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			n, err := action(c, ctx, args[0])
			if err != nil {
				return about(err, "node", args[0])
			}
			if a.json {
				return printJSON(cmd.OutOrStdout(), n)
			}
			fmt.Fprintf(cmd.OutOrStdout(), done, args[0])
			return nil
		},
	}
}

func newNodeDeregisterCmd(a *app) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:               "deregister ID",
		ValidArgsFunction: a.completeNodes(),
		Short:             "Remove a node from the cluster (refused while it holds jobs, unless --force)",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, cancel, err := a.connect(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			if err := c.DeregisterNode(ctx, args[0], force); err != nil {
				return about(err, "node", args[0])
			}
			if a.json {
				return printJSON(cmd.OutOrStdout(), doneJSON{Kind: "node", ID: args[0], Result: "deregistered"})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "node %q deregistered\n", args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "deregister even though jobs are assigned (they are re-placed)")
	return cmd
}
