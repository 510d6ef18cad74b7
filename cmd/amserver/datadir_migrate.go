package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/amserver/amserver/raftstore"
)

// newDataDirMigrateCmd moves a stopped server's Raft log from bolt to the
// WAL in place (operations.md §4.2), for servers that cannot re-sync from
// a leader (a single server) or should not wait for one to.
func newDataDirMigrateCmd(a *app) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "migrate-to-wal --data-dir DIR",
		Short: "Move a stopped server's Raft log and vote from raft.db (bolt) to the WAL",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkDataDirFlag(dir); err != nil {
				return err
			}
			logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			m, err := raftstore.MigrateToWAL(cmd.Context(), dir, logger)
			switch {
			case errors.Is(err, raftstore.ErrInUse):
				return sentence(err, "%v: stop the server first", err)
			case errors.Is(err, raftstore.ErrNoRaftData):
				return sentence(err, "%s holds no Raft log store: nothing to migrate", dir)
			case errors.Is(err, raftstore.ErrDamaged):
				return sentence(err, "%s is damaged and was left as it is (%v)", dir, err)
			case err != nil:
				return sentence(err, "the migration of %s failed, and the server still starts on its raft.db: %v", dir, err)
			}
			report := migrationReport{DataDir: dir, AlreadyWAL: m.AlreadyWAL, First: m.First, Last: m.Last, Term: m.Term,
				KeptBolt: m.KeptBolt, RebuiltFromBolt: m.RebuiltFromBolt}
			return a.emit(cmd.OutOrStdout(), report, func(w io.Writer) error { return printMigration(w, report) })
		},
	}
	cmd.Flags().StringVar(&dir, "data-dir", "", "the stopped server's data directory")
	return cmd
}

type migrationReport struct {
	DataDir         string `json:"dataDir"`
	AlreadyWAL      bool   `json:"alreadyWal"`
	First           uint64 `json:"firstIndex"`
	Last            uint64 `json:"lastIndex"`
	Term            uint64 `json:"term"`
	KeptBolt        string `json:"keptBolt,omitempty"`
	RebuiltFromBolt bool   `json:"rebuiltFromBolt,omitempty"`
}

func printMigration(w io.Writer, r migrationReport) error {
	if r.AlreadyWAL {
		_, err := fmt.Fprintf(w, "%s already keeps its Raft log in the WAL: nothing to do\n", clean(r.DataDir))
		return err
	}
	if r.RebuiltFromBolt {
		if _, err := fmt.Fprintln(w, "a WAL beside raft.db (an unfinished migration, or a downgrade) was dropped and rebuilt from raft.db"); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "moved log entries %d..%d and the stored term %d from raft.db to the WAL; raft.db is kept as %s: delete it once the server runs\n",
		r.First, r.Last, r.Term, clean(r.KeptBolt))
	return err
}
