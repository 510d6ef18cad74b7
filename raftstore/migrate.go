package raftstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/hashicorp/raft-wal/migrate"
)

// ErrNoRaftData marks a data directory without a Raft log store.
var ErrNoRaftData = errors.New("no Raft log store")

// Migration is what MigrateToWAL moved.
type Migration struct {
	AlreadyWAL      bool   // nothing to do
	First, Last     uint64 // the log entries moved (0, 0: none)
	Term            uint64 // the stored current term
	KeptBolt        string // where raft.db went
	RebuiltFromBolt bool   // a wal/ beside raft.db was dropped first
}

// boltKept is raft.db's name once its contents are in the WAL: the server
// no longer reads it, the operator deletes it once the server runs.
const boltKept = "raft.db.pre-wal"

// raft's stable keys (hashicorp/raft raft.go); no others are written.
var (
	stableIntKeys = [][]byte{[]byte("CurrentTerm"), []byte("LastVoteTerm")}
	stableKeys    = [][]byte{[]byte("LastVoteCand")}
)

// MigrateToWAL moves a stopped server's Raft log and stored term and vote
// from bolt (raft.db) to the WAL, so that it need not be re-synced from a
// leader (a single server has none). The WAL is written beside raft.db and
// renamed into place before raft.db is renamed aside: a stop between the
// two leaves both, which a server refuses as damage and a second run
// redoes from raft.db (the store a server last wrote, as after a
// downgrade). A directory in use or damaged is refused unchanged.
func MigrateToWAL(ctx context.Context, dataDir string, logger *slog.Logger) (Migration, error) {
	raftDir := filepath.Join(dataDir, "raft")
	held, bothErr := storedLogStore(raftDir)
	var m Migration
	switch {
	case bothErr != nil:
		for _, f := range []string{boltFile(raftDir), walMetaFile(raftDir)} {
			if err := checkNotInUse(dataDir, f); err != nil {
				return m, err
			}
		}
		if err := os.RemoveAll(walDir(raftDir)); err != nil {
			return m, fmt.Errorf("drop the WAL beside raft.db: %w", err)
		}
		m.RebuiltFromBolt = true
	case held == LogStoreWAL:
		return Migration{AlreadyWAL: true}, nil
	case held == logStoreNone:
		return m, fmt.Errorf("%w in %s", ErrNoRaftData, dataDir)
	}
	if err := CheckDataDir(dataDir, false); err != nil {
		return m, err
	}
	if err := copyToWAL(ctx, raftDir, logger, &m); err != nil {
		return m, err
	}
	return m, swapInWAL(raftDir, &m)
}

// migrating is the WAL being written, renamed to wal/ once complete.
func migrating(raftDir string) string { return filepath.Join(raftDir, "wal.migrating") }

// copyToWAL copies raft.db's log and stable keys into a new WAL beside it
// and checks the copy's bounds and term.
func copyToWAL(ctx context.Context, raftDir string, logger *slog.Logger, m *Migration) error {
	bolt, err := openBolt(raftDir)
	if err != nil {
		return err
	}
	defer func() { _ = bolt.Close() }()
	tmp := migrating(raftDir)
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("drop an earlier, unfinished copy: %w", err)
	}
	dst, _, closeDst, err := openWAL(tmp, logger)
	if err != nil {
		return err
	}
	err = copyLogsAndVote(ctx, dst, bolt, m)
	return errors.Join(err, closeDst())
}

func copyLogsAndVote(ctx context.Context, dst interface {
	raft.LogStore
	raft.StableStore
}, src *raftboltdb.BoltStore, m *Migration) error {
	first, err1 := src.FirstIndex()
	last, err2 := src.LastIndex()
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("read raft.db's bounds: %w", err)
	}
	if last > 0 {
		if err := migrate.CopyLogs(ctx, dst, src, 1<<20, nil); err != nil {
			return fmt.Errorf("copy the log: %w", err)
		}
	}
	m.First, m.Last = first, last
	for _, k := range stableIntKeys {
		v, err := src.GetUint64(k)
		if errors.Is(err, raftboltdb.ErrKeyNotFound) {
			continue // never written: Raft reads it as 0
		}
		if err == nil {
			err = dst.SetUint64(k, v)
		}
		if err != nil {
			return fmt.Errorf("copy %s: %w", k, err)
		}
	}
	for _, k := range stableKeys {
		v, err := src.Get(k)
		if errors.Is(err, raftboltdb.ErrKeyNotFound) {
			continue
		}
		if err == nil {
			err = dst.Set(k, v)
		}
		if err != nil {
			return fmt.Errorf("copy %s: %w", k, err)
		}
	}
	gotFirst, err1 := dst.FirstIndex()
	gotLast, err2 := dst.LastIndex()
	term, err3 := dst.GetUint64(stableIntKeys[0])
	want, _ := src.GetUint64(stableIntKeys[0])
	if err := errors.Join(err1, err2); err != nil || gotFirst != first || gotLast != last || (err3 == nil && term != want) {
		return fmt.Errorf("the copy does not match raft.db: entries %d..%d and term %d, want %d..%d and %d (%w)",
			gotFirst, gotLast, term, first, last, want, errors.Join(err, err3))
	}
	m.Term = want
	return nil
}

// swapInWAL renames the finished copy to wal/, then raft.db aside.
func swapInWAL(raftDir string, m *Migration) error {
	if err := os.Rename(migrating(raftDir), walDir(raftDir)); err != nil {
		return fmt.Errorf("put the WAL in place: %w", err)
	}
	if err := syncDir(raftDir); err != nil {
		return err
	}
	m.KeptBolt = filepath.Join(raftDir, boltKept)
	if err := os.Rename(boltFile(raftDir), m.KeptBolt); err != nil {
		return fmt.Errorf("move raft.db aside (the server refuses both stores until it is): %w", err)
	}
	if err := privateTree(filepath.Dir(raftDir)); err != nil {
		return err
	}
	return syncDir(raftDir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}
