package raftstore

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
)

// The data directory holds token hashes and gossip keys: directories are
// 0700 and files 0600. raft's file snapshot store makes 0755 directories
// and 0644 files, so what it writes is tightened as it is written, and a
// directory written by an older version is tightened when it opens.

// privateTree makes dataDir's raft tree owner-only.
func privateTree(dataDir string) error {
	root := filepath.Join(dataDir, "raft")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		return os.Chmod(path, privateMode(d.IsDir()))
	})
	if err != nil {
		return fmt.Errorf("restrict %s to its owner: %w", root, err)
	}
	return nil
}

func privateMode(dir bool) fs.FileMode {
	if dir {
		return 0o700
	}
	return 0o600
}

// privateSnapshots is raft's snapshot store with owner-only permissions.
type privateSnapshots struct {
	*raft.FileSnapshotStore
	path string // the store's snapshots directory
}

var _ raft.SnapshotStore = privateSnapshots{}

// Create starts a snapshot in a directory only the owner can enter.
func (p privateSnapshots) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := p.FileSnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return nil, err
	}
	return &privateSink{SnapshotSink: sink, store: p}, nil
}

// privateSink tightens the finished snapshot's files.
type privateSink struct {
	raft.SnapshotSink
	store privateSnapshots
}

func (s *privateSink) Close() error {
	if err := s.SnapshotSink.Close(); err != nil {
		return err
	}
	dir := filepath.Join(s.store.path, s.ID())
	_ = os.Chmod(dir, 0o700)
	for _, name := range []string{"state.bin", "meta.json"} {
		_ = os.Chmod(filepath.Join(dir, name), 0o600)
	}
	return nil
}
