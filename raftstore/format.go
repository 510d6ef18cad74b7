package raftstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/amserver/amserver/snapshot"
)

// ErrUnsupportedFormat marks a data directory whose snapshots another
// amserver version wrote in a format this build cannot read: not damage,
// so it is not reported with the advice to wipe the directory.
var ErrUnsupportedFormat = errors.New("data directory written by another amserver version")

// checkSnapshotFormats reads the preamble of every finished snapshot under
// dir; Raft would fail to restore each one and stop with only
// "failed to load any existing snapshots".
func checkSnapshotFormats(dataDir, dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // checkSnapshots reports it
	}
	for _, e := range entries {
		if !e.IsDir() || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		path := filepath.Join(dir, e.Name(), "state.bin")
		if err := checkSnapshotFormat(path); err != nil {
			return fmt.Errorf("%w: %s: %w: run the amserver version that wrote it (a server is taken back to an "+
				"older version by wiping --data-dir %s and letting the cluster's leader re-sync it)", ErrUnsupportedFormat, path, err, dataDir)
		}
	}
	return nil
}

func checkSnapshotFormat(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil // checkSnapshots reports it
	}
	defer func() { _ = f.Close() }()
	if _, err := snapshot.NewReader(f); errors.Is(err, snapshot.ErrUnsupportedVersion) {
		return err
	}
	return nil
}
