package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/amserver/amserver/api"
)

func newOperatorCmd(a *app) *cobra.Command {
	cmd := makeGroup(&cobra.Command{
		Use:   "operator",
		Short: "Cluster operations: Raft membership and snapshots",
	})
	raft := makeGroup(&cobra.Command{Use: "raft", Short: "Inspect and change the Raft configuration"})
	raft.AddCommand(newRaftListPeersCmd(a), newRaftRemovePeerCmd(a), newRaftTransferCmd(a))
	snap := makeGroup(&cobra.Command{Use: "snapshot", Short: "Save, restore and inspect snapshots of the whole state"})
	snap.AddCommand(newSnapshotSaveCmd(a), newSnapshotRestoreCmd(a), newSnapshotInspectCmd(a))
	cmd.AddCommand(raft, snap)
	return cmd
}

func newRaftListPeersCmd(a *app) *cobra.Command {
	return clientCmd[*api.RaftConfiguration]{
		Use:   "list-peers",
		Short: "List the servers of the Raft configuration",
		Args:  cobra.NoArgs,
		Kind:  "raft configuration",
		Call: func(ctx context.Context, c *api.Client, _ []string) (*api.RaftConfiguration, error) {
			rc, _, err := c.RaftConfiguration(ctx, a.query())
			return rc, err
		},
		Text: printRaft,
	}.build(a)
}

func printRaft(w io.Writer, rc *api.RaftConfiguration) error {
	t := newTable(w)
	t.row("ID", "ADDRESS", "STATE", "SUFFRAGE")
	for _, p := range rc.Servers {
		state := "follower"
		if p.Leader {
			state = "leader"
		}
		t.row(p.ID, p.Address, state, orDash(p.Suffrage))
	}
	if err := t.flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nterm %d, last index %d, commit index %d, applied index %d (answered by %s, %s)\n",
		rc.Term, rc.LastIndex, rc.CommitIndex, rc.AppliedIndex, clean(orDash(rc.ServerID)), clean(orDash(rc.State)))
	return err
}

func newRaftRemovePeerCmd(a *app) *cobra.Command {
	return removeCmd(a, "remove-peer ID", "Remove a server from the Raft configuration", "raft peer",
		"server %q removed from the Raft configuration", (*api.Client).RemovePeer)
}

func newRaftTransferCmd(a *app) *cobra.Command {
	return clientCmd[noBody]{
		Use:   "transfer-leadership [ID]",
		Short: "Hand leadership to server ID, or to a follower Raft picks",
		Args:  cobra.MaximumNArgs(1),
		Kind:  "raft peer",
		Call: func(ctx context.Context, c *api.Client, args []string) (noBody, error) {
			target := ""
			if len(args) == 1 {
				target = args[0]
			}
			return noBody{}, c.TransferLeadership(ctx, target)
		},
		Done: "leadershipTransferred",
		Sentence: func(target string, _ noBody) string {
			if target == "" {
				return "leadership transferred to a follower"
			}
			return "leadership transferred to " + strconv.Quote(target)
		},
	}.build(a)
}
