package raftstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
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
		if err := CheckDataDir(dataDir, false); errors.Is(err, ErrInUse) {
			return m, err
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
	dst, _, closeDst, err := openWAL(tmp, 0, logger)
	if err != nil {
		return err
	}
	err = copyLogsAndVote(ctx, dst, bolt, raftDir, m)
	return errors.Join(err, closeDst())
}

func copyLogsAndVote(ctx context.Context, dst interface {
	raft.LogStore
	raft.StableStore
}, src *raftboltdb.BoltStore, raftDir string, m *Migration) error {
	first, last, err := copyableRange(src, raftDir)
	if err != nil {
		return err
	}
	if err := copyLogs(ctx, dst, src, first, last); err != nil {
		return err
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

// copyableRange is the run of raft.db's entries that ends at its last one
// without a gap. Bolt may hold older entries below a gap: Raft skips an
// index when it restores a user's snapshot, and the WAL takes no gaps.
// Entries below a gap are covered by a snapshot, which the check makes
// sure of; an entry missing above the latest snapshot is damage.
func copyableRange(src *raftboltdb.BoltStore, raftDir string) (first, last uint64, err error) {
	lo, err1 := src.FirstIndex()
	hi, err2 := src.LastIndex()
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, fmt.Errorf("read raft.db's bounds: %w", err)
	}
	if hi == 0 {
		return 0, 0, nil
	}
	first = hi
	for first > lo {
		var l raft.Log
		if err := src.GetLog(first-1, &l); errors.Is(err, raft.ErrLogNotFound) {
			break
		} else if err != nil {
			return 0, 0, fmt.Errorf("read raft.db's entry %d: %w", first-1, err)
		}
		first--
	}
	if first > lo {
		snaps, err := raft.NewFileSnapshotStoreWithLogger(raftDir, 3, hclog.NewNullLogger())
		if err != nil {
			return 0, 0, err
		}
		metas, err := snaps.List()
		if err != nil {
			return 0, 0, err
		}
		if len(metas) == 0 || metas[0].Index < first-1 {
			return 0, 0, fmt.Errorf("raft.db lacks entry %d, which no snapshot covers", first-1)
		}
	}
	return first, hi, nil
}

// copyLogs appends src's entries first..last to dst in batches of about
// a megabyte.
func copyLogs(ctx context.Context, dst raft.LogStore, src raft.LogStore, first, last uint64) error {
	if last == 0 {
		return nil
	}
	var batch []*raft.Log
	size := 0
	for i := first; i <= last; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		l := new(raft.Log)
		if err := src.GetLog(i, l); err != nil {
			return fmt.Errorf("read raft.db's entry %d: %w", i, err)
		}
		batch, size = append(batch, l), size+len(l.Data)
		if size >= 1<<20 || i == last {
			if err := dst.StoreLogs(batch); err != nil {
				return fmt.Errorf("write entries up to %d: %w", i, err)
			}
			batch, size = batch[:0], 0
		}
	}
	return nil
}
