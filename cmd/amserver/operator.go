package main

import (
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
	return &cobra.Command{
		Use:   "list-peers",
		Short: "List the servers of the Raft configuration",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ctx, cancel, err := a.connect(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			rc, _, err := c.RaftConfiguration(ctx, a.query())
			if err != nil {
				return about(err, "raft configuration", "")
			}
			if a.json {
				return printJSON(cmd.OutOrStdout(), rc)
			}
			return printRaft(cmd.OutOrStdout(), rc)
		},
	}
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
	return newRemoveCmd(a, "remove-peer ID", "Remove a server from the Raft configuration", "raft peer",
		"server %q removed from the Raft configuration", (*api.Client).RemovePeer)
}

func newRaftTransferCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "transfer-leadership [ID]",
		Short: "Hand leadership to server ID, or to a follower Raft picks",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			target := ""
			if len(args) == 1 {
				target = args[0]
			}
			c, ctx, cancel, err := a.connect(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			if err := c.TransferLeadership(ctx, target); err != nil {
				return about(err, "raft peer", target)
			}
			if a.json {
				return printJSON(cmd.OutOrStdout(), doneJSON{Kind: "raft peer", ID: target, Result: "leadershipTransferred"})
			}
			if target == "" {
				target = "a follower"
			} else {
				target = strconv.Quote(target)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "leadership transferred to %s\n", target)
			return nil
		},
	}
}
