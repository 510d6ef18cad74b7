package raftstore

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	wal "github.com/hashicorp/raft-wal"
	walfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
)

// openWAL opens the WAL in dir around two gaps of raft-wal v0.4.2 that
// would otherwise stop a server for good:
//   - An append that fills a segment seals it (writes its index) and
//     returns; the meta database learns of the seal, and of the next
//     segment, in the background. A server stopped or killed in between
//     reopens a tail that refuses every append ("segment is sealed").
//     finishRotation completes such a rotation before raft-wal reads the
//     meta database.
//   - Close leaves the meta database open, and with it the file lock: a
//     server restarted in the same process would wait for that lock for
//     good. The store owns the meta database and closes it.
func openWAL(dir string, segmentSize int, logger *slog.Logger) (*wal.WAL, *wal.WAL, func() error, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, nil, fmt.Errorf("create raft wal dir: %w", err)
	}
	if err := finishRotation(dir, logger); err != nil {
		return nil, nil, nil, fmt.Errorf("open raft log store %s: %w", dir, err)
	}
	meta := &metadb.BoltMetaDB{}
	w, err := wal.Open(dir, wal.WithMetaStore(meta), wal.WithSegmentSize(segmentSize),
		wal.WithLogger(newHclogBridge(logger, "raft-wal", hclog.Info)))
	if err != nil {
		return nil, nil, nil, errors.Join(fmt.Errorf("open raft log store %s: %w", dir, err), meta.Close())
	}
	closeAll := func() error { return errors.Join(w.Close(), meta.Close()) }
	return w, w, closeAll, nil
}

// finishRotation completes the rotation of a last segment that holds its
// index (it was sealed) while the meta database still lists it open: it
// records the seal and a next segment, whose file raft-wal creates when it
// opens. The sealed segment's entries were all synced before the append
// that sealed it returned, so nothing is dropped.
func finishRotation(dir string, logger *slog.Logger) error {
	meta := &metadb.BoltMetaDB{}
	state, err := meta.Load(dir)
	if err != nil {
		return errors.Join(err, meta.Close())
	}
	defer func() { _ = meta.Close() }()
	n := len(state.Segments)
	if n == 0 || !state.Segments[n-1].SealTime.IsZero() {
		return nil
	}
	tail := state.Segments[n-1]
	sw, err := segment.NewFiler(dir, walfs.New()).RecoverTail(tail)
	if errors.Is(err, os.ErrNotExist) {
		return nil // raft-wal creates a listed tail that has no file yet
	}
	if err != nil {
		return err
	}
	sealed, indexStart, err := sw.Sealed()
	last := sw.LastIndex()
	if err = errors.Join(err, sw.Close()); err != nil || !sealed {
		return err
	}
	now := time.Now()
	tail.SealTime, tail.IndexStart, tail.MaxIndex = now, indexStart, last
	state.Segments[n-1] = tail
	next := tail
	next.ID, next.BaseIndex, next.MinIndex, next.MaxIndex = state.NextSegmentID, last+1, last+1, 0
	next.IndexStart, next.CreateTime, next.SealTime = 0, now, time.Time{}
	state.Segments = append(state.Segments, next)
	state.NextSegmentID++
	logger.Warn("raft log: finished a segment rotation a stop cut short", "segment", tail.ID, "last_index", last)
	return meta.CommitState(state)
}
