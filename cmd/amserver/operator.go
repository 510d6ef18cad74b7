package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/raftstore"
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
	dd := makeGroup(&cobra.Command{Use: "data-dir", Short: "Inspect a server's data directory"})
	dd.AddCommand(newDataDirCheckCmd(a), newDataDirMigrateCmd(a))
	cmd.AddCommand(raft, snap, dd)
	return cmd
}

// newDataDirCheckCmd diagnoses a stopped server's data directory without
// opening it the way a server would (a damaged raft.db could crash that).
func newDataDirCheckCmd(a *app) *cobra.Command {
	var dir string
	var recoverVote bool
	cmd := &cobra.Command{
		Use:   "check --data-dir DIR",
		Short: "Check a stopped server's data directory for damage, and say how to recover",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkDataDirFlag(dir); err != nil {
				return err
			}
			err := raftstore.CheckDataDir(dir, recoverVote)
			var de *raftstore.DamageError
			if err != nil && !errors.As(err, &de) {
				return err
			}
			_, statErr := os.Stat(filepath.Join(dir, "raft"))
			report := dataDirReport{DataDir: dir, OK: err == nil, Empty: errors.Is(statErr, os.ErrNotExist),
				LogStore: string(raftstore.StoredLogStore(dir)), Problems: []dataDirProblem{}}
			if de != nil {
				for _, p := range de.Problems {
					report.Problems = append(report.Problems, dataDirProblem{File: p.File, Problem: p.What})
				}
			}
			if perr := a.emit(cmd.OutOrStdout(), report, func(w io.Writer) error { return printDataDir(w, report) }); perr != nil {
				return perr
			}
			if err != nil {
				return sentence(err, "%s is damaged: wipe it and start the server again with the same flags to re-sync it from the leader "+
					"(a single server restores a saved snapshot instead: amserver operator snapshot restore)", dir)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "data-dir", "", "the server's data directory")
	cmd.Flags().BoolVar(&recoverVote, "recover", false, "accept a lost stored term and vote, as `amserver agent --recover` would")
	return cmd
}

// checkDataDirFlag is the --data-dir of a command on a stopped server's
// files: given, and a directory (a mistyped path must not pass as a sound,
// empty one).
func checkDataDirFlag(dir string) error {
	if dir == "" {
		return usagef("--data-dir is required")
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return usagef("--data-dir %s is not a directory: %v", dir, statProblem(err))
	}
	return nil
}

type dataDirProblem struct {
	File    string `json:"file"`
	Problem string `json:"problem"`
}

type dataDirReport struct {
	DataDir  string           `json:"dataDir"`
	OK       bool             `json:"ok"`
	Empty    bool             `json:"empty"`              // no Raft data: a server started on it starts with no state
	LogStore string           `json:"logStore,omitempty"` // wal or bolt (operations.md §4.2)
	Problems []dataDirProblem `json:"problems"`
}

func statProblem(err error) string {
	if err == nil {
		return "it is a file"
	}
	return unwrapPathError(err).Error()
}

func printDataDir(w io.Writer, r dataDirReport) error {
	if r.OK && r.Empty {
		_, err := fmt.Fprintf(w, "%s: no damage found, and no Raft data: a server started on it starts with no state\n", clean(r.DataDir))
		return err
	}
	if r.OK {
		_, err := fmt.Fprintf(w, "%s: no damage found (Raft log store: %s)\n", clean(r.DataDir), r.LogStore)
		return err
	}
	for _, p := range r.Problems {
		if _, err := fmt.Fprintf(w, "%s: %s\n", clean(p.File), clean(p.Problem)); err != nil {
			return err
		}
	}
	return nil
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
		// Without a leader the server asked answers with its own view,
		// printed as such; the exit code says the cluster is down, as
		// status does.
		Verdict: func(_ string, rc *api.RaftConfiguration) error {
			if rc.Leader == nil {
				return sentence(errors.New("no leader"), "the cluster has no leader")
			}
			return nil
		},
	}.build(a)
}

func printRaft(w io.Writer, rc *api.RaftConfiguration) error {
	t := newTable(w)
	// STATUS is gossip's view from the answering server: Raft names a
	// dead server a follower as long as the configuration holds it.
	t.row("ID", "ADDRESS", "STATE", "STATUS", "SUFFRAGE")
	for _, p := range rc.Servers {
		state := "follower"
		if p.Leader {
			state = "leader"
		}
		t.row(p.ID, p.Address, state, orDash(p.Status), orDash(p.Suffrage))
	}
	if err := t.flush(); err != nil {
		return err
	}
	store := ""
	if rc.LogStore != "" {
		store = ", log store " + clean(rc.LogStore)
	}
	if _, err := fmt.Fprintf(w, "\nterm %d, last index %d, commit index %d, applied index %d (answered by %s, %s%s)\n",
		rc.Term, rc.LastIndex, rc.CommitIndex, rc.AppliedIndex, clean(orDash(rc.ServerID)), clean(orDash(rc.State)), store); err != nil {
		return err
	}
	if rc.Leader != nil {
		return nil
	}
	_, err := fmt.Fprintf(w, "no leader: this is %s's own view of the Raft configuration, which may be out of date "+
		"(an election is running, or quorum is lost)\n", clean(orDash(rc.ServerID)))
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
