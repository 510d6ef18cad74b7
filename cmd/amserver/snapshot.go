package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/amserver/amserver/snapshot"
)

// snapshotSummary is the --json shape of the snapshot commands (the
// snapshot package's Info has no JSON form of its own).
type snapshotSummary struct {
	File     string            `json:"file"`
	Version  uint16            `json:"version"`
	Index    uint64            `json:"index"`
	Term     uint64            `json:"term"`
	Created  time.Time         `json:"created,omitzero"`
	Meta     map[string]string `json:"meta,omitempty"`
	Records  int               `json:"records"`
	Bytes    int64             `json:"bytes"`
	Checksum uint32            `json:"checksum"`
	Sections []sectionSummary  `json:"sections"`
}

type sectionSummary struct {
	Kind    uint8  `json:"kind"`
	Name    string `json:"name"`
	Records int    `json:"records"`
	Bytes   int64  `json:"bytes"`
}

func summarize(path string, i snapshot.Info) snapshotSummary {
	s := snapshotSummary{File: path, Version: i.Header.Version, Index: i.Header.Index, Term: i.Header.Term,
		Meta: i.Header.Meta, Records: i.Records, Bytes: i.Bytes, Checksum: i.Checksum, Sections: []sectionSummary{}}
	if i.Header.CreatedUnixNano != 0 {
		s.Created = time.Unix(0, i.Header.CreatedUnixNano).UTC()
	}
	for _, sec := range i.Sections {
		s.Sections = append(s.Sections, sectionSummary{sec.Kind, sec.Name, sec.Records, sec.Bytes})
	}
	return s
}

// inspectFile verifies a snapshot file offline: structure and checksum.
func inspectFile(path string) (snapshot.Info, error) {
	f, err := os.Open(path)
	if err != nil {
		return snapshot.Info{}, usagef("cannot read snapshot file %q: %v", path, unwrapPathError(err))
	}
	defer f.Close()
	info, err := snapshot.Inspect(f)
	if err != nil {
		return snapshot.Info{}, usagef("invalid snapshot file %q: %v", path, err)
	}
	return info, nil
}

func newSnapshotInspectCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "inspect FILE",
		Short: "Verify a snapshot file and summarise it (offline, no server needed)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			info, err := inspectFile(args[0])
			if err != nil {
				return err
			}
			return a.emit(cmd.OutOrStdout(), summarize(args[0], info), info.WriteTable)
		},
	}
}

func newSnapshotSaveCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "save FILE",
		Short: "Save a snapshot of the whole cluster state to FILE (verified before it replaces FILE)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Before the download: the rename at the end would fail with
			// "file exists" once the whole snapshot had been fetched.
			if fi, err := os.Stat(args[0]); err == nil && fi.IsDir() {
				return usagef("cannot write snapshot file %q: it is a directory; name a file in it", args[0])
			}
			c, ctx, cancel, err := a.connect(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			tmp, err := os.CreateTemp(filepath.Dir(args[0]), ".amserver-snapshot-*")
			if err != nil {
				return usagef("cannot write snapshot file %q: %v", args[0], unwrapPathError(err))
			}
			// Until the rename below succeeds, the temporary file is garbage.
			defer os.Remove(tmp.Name())
			_, err = c.SnapshotSave(ctx, tmp)
			if err = errors.Join(err, tmp.Sync(), tmp.Close()); err != nil {
				return about(err, "snapshot", "")
			}
			return a.finishSave(cmd.OutOrStdout(), tmp.Name(), args[0])
		},
	}
}

// finishSave checks what the server sent before it takes the file's name,
// so that a truncated download never replaces a good snapshot.
func (a *app) finishSave(w io.Writer, tmp, path string) error {
	f, err := os.Open(tmp)
	if err != nil {
		return err
	}
	info, err := snapshot.Inspect(f)
	f.Close()
	if err != nil {
		return sentence(err, "the server sent an invalid snapshot (%v); %s was not written", err, path)
	}
	if err := os.Rename(tmp, path); err != nil {
		return usagef("cannot write snapshot file %q: %v", path, err)
	}
	return a.emit(w, summarize(path, info), line("saved snapshot of index %d (term %d, %d records, %d bytes) to %s",
		info.Header.Index, info.Header.Term, info.Records, info.Bytes, path))
}

func newSnapshotRestoreCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "restore FILE",
		Short: "Replace the whole cluster state with a snapshot file",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Verify locally first: a bad file is the user's mistake (exit
			// 2) and is never sent.
			info, err := inspectFile(args[0])
			if err != nil {
				return err
			}
			f, err := os.Open(args[0])
			if err != nil {
				return usagef("cannot read snapshot file %q: %v", args[0], unwrapPathError(err))
			}
			defer f.Close()
			c, ctx, cancel, err := a.connect(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			if err := c.SnapshotRestore(ctx, f); err != nil {
				return about(err, "snapshot", args[0])
			}
			return a.emit(cmd.OutOrStdout(), summarize(args[0], info),
				line("restored snapshot of index %d from %s: the cluster state was replaced", info.Header.Index, args[0]))
		},
	}
}
