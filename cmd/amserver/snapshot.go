package main

import (
	"errors"
	"fmt"
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
	return inspectSnapshot(f, displayName(path))
}

func inspectSnapshot(r io.Reader, name string) (snapshot.Info, error) {
	info, err := snapshot.Inspect(r)
	if err != nil {
		return snapshot.Info{}, usagef("invalid snapshot file %s: %v", name, err)
	}
	return info, nil
}

// spoolStdin copies standard input to a temporary file: a snapshot read
// from a pipe is verified before it is sent, which reads it twice. The
// caller closes the file; it is already unlinked.
func (a *app) spoolStdin() (*os.File, error) {
	if a.in == nil {
		return nil, usagef("cannot read snapshot file (stdin): no standard input")
	}
	tmp, err := os.CreateTemp("", ".amserver-snapshot-*")
	if err != nil {
		return nil, fmt.Errorf("spool standard input: %w", err)
	}
	_ = os.Remove(tmp.Name()) // the open file lives on; nothing is left behind
	if _, err := io.Copy(tmp, a.in); err != nil {
		_ = tmp.Close()
		return nil, usagef("cannot read snapshot file (stdin): %v", err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		_ = tmp.Close()
		return nil, fmt.Errorf("spool standard input: %w", err)
	}
	return tmp, nil
}

func newSnapshotInspectCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "inspect FILE|-",
		Short: "Verify a snapshot file (- reads standard input) and summarise it (offline, no server needed)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var info snapshot.Info
			var err error
			if args[0] == stdStream {
				if a.in == nil {
					return usagef("cannot read snapshot file (stdin): no standard input")
				}
				info, err = inspectSnapshot(a.in, displayName(stdStream))
			} else {
				info, err = inspectFile(args[0])
			}
			if err != nil {
				return err
			}
			return a.emit(cmd.OutOrStdout(), summarize(args[0], info), info.WriteTable)
		},
	}
}

func newSnapshotSaveCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "save FILE|-",
		Short: "Save a snapshot of the whole cluster state to FILE (verified before it replaces FILE), or with - to standard output",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] == stdStream {
				return a.saveToStdout(cmd)
			}
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

// stdStream is the FILE that names standard output (save) or input
// (restore, inspect).
const stdStream = "-"

// saveToStdout downloads to a temporary file and verifies it before any
// byte reaches standard output, so a pipe never receives a truncated
// snapshot; stdout carries the snapshot alone, the summary goes to stderr.
func (a *app) saveToStdout(cmd *cobra.Command) error {
	c, ctx, cancel, err := a.connect(cmd)
	if err != nil {
		return err
	}
	defer cancel()
	tmp, err := os.CreateTemp("", ".amserver-snapshot-*")
	if err != nil {
		return fmt.Errorf("temporary snapshot file: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if _, err := c.SnapshotSave(ctx, tmp); err != nil {
		return about(err, "snapshot", "")
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("temporary snapshot file: %w", err)
	}
	info, err := snapshot.Inspect(tmp)
	if err != nil {
		return sentence(err, "the server sent an invalid snapshot (%v); nothing was written to standard output", err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("temporary snapshot file: %w", err)
	}
	if _, err := io.Copy(cmd.OutOrStdout(), tmp); err != nil {
		return fmt.Errorf("write the snapshot to standard output: %w", err)
	}
	return a.emit(cmd.ErrOrStderr(), summarize(stdStream, info), line("saved snapshot of index %d (term %d, %d records, %d bytes) to standard output",
		info.Header.Index, info.Header.Term, info.Records, info.Bytes))
}

// openSnapshot opens and verifies the snapshot a restore sends: FILE, or
// standard input spooled to a temporary file.
func (a *app) openSnapshot(path string) (*os.File, snapshot.Info, error) {
	var f *os.File
	var err error
	if path == stdStream {
		f, err = a.spoolStdin()
	} else if f, err = os.Open(path); err != nil {
		err = usagef("cannot read snapshot file %q: %v", path, unwrapPathError(err))
	}
	if err != nil {
		return nil, snapshot.Info{}, err
	}
	info, err := inspectSnapshot(f, displayName(path))
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		_ = f.Close()
		return nil, snapshot.Info{}, err
	}
	return f, info, nil
}

func newSnapshotRestoreCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "restore FILE|-",
		Short: "Replace the whole cluster state with a snapshot file (- reads standard input)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Verify locally first: a bad file is the user's mistake (exit
			// 2) and is never sent.
			f, info, err := a.openSnapshot(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			c, ctx, cancel, err := a.connect(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			if err := c.SnapshotRestore(ctx, f); err != nil {
				id := args[0]
				if id == stdStream {
					id = "" // "snapshot: ...", not `snapshot "-"`
				}
				return about(err, "snapshot", id)
			}
			return a.emit(cmd.OutOrStdout(), summarize(args[0], info),
				line("restored snapshot of index %d from %s: the cluster state was replaced", info.Header.Index, restoredFrom(args[0])))
		},
	}
}

func restoredFrom(path string) string {
	if path == stdStream {
		return "standard input"
	}
	return path
}
