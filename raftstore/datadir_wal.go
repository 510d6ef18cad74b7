package raftstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
	"go.etcd.io/bbolt"
)

// walSegmentFiles counts the segment files in raftDir's WAL (none for a
// bolt store).
func walSegmentFiles(raftDir string, kind LogStore) int {
	if kind != LogStoreWAL {
		return 0
	}
	segs, _ := filepath.Glob(filepath.Join(walDir(raftDir), "*.wal"))
	return len(segs)
}

// checkWALSegments compares the segment files of the WAL whose meta
// database is metaPath with the list the meta database keeps. raft-wal
// reads a damaged last segment as a write torn by a crash and drops what
// follows the damage, acknowledged entries included, without a word; a
// segment is preallocated to its size limit and never shrunk, so one that
// is missing or shorter was damaged, not torn (but for a last segment not
// yet written to, which may be either).
func checkWALSegments(metaPath string) []Problem {
	db, err := bbolt.Open(metaPath, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return []Problem{{metaPath, "unreadable: " + err.Error()}}
	}
	defer func() { _ = db.Close() }()
	var state types.PersistentState
	err = db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(metadb.MetaBucket))
		if b == nil {
			return nil // a WAL that never committed its first segment
		}
		raw := b.Get([]byte(metadb.MetaKey))
		if raw == nil {
			return nil
		}
		return json.Unmarshal(raw, &state)
	})
	if err != nil {
		return []Problem{{metaPath, "the segment list is not valid: " + err.Error()}}
	}
	var probs []Problem
	for i, seg := range state.Segments {
		path := filepath.Join(filepath.Dir(metaPath), segment.FileName(seg))
		fi, err := os.Stat(path)
		newTail := i == len(state.Segments)-1 && seg.SealTime.IsZero()
		switch {
		case newTail && (errors.Is(err, os.ErrNotExist) || (err == nil && fi.Size() == 0)):
			// A rotation lists the next segment before it creates the file,
			// which is synced at its first append: a stop in between leaves
			// it missing or empty, holding nothing, and raft-wal recreates it.
		case err != nil:
			probs = append(probs, Problem{path, "a log segment is missing or unreadable: " + err.Error()})
		case fi.Size() < int64(seg.SizeLimit):
			probs = append(probs, Problem{path, fmt.Sprintf("truncated: %d of at least %d bytes", fi.Size(), seg.SizeLimit)})
		}
	}
	return probs
}
