package raftstore

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/hashicorp/raft-wal/metadb"
	"go.etcd.io/bbolt"
)

// A server keeps its Raft log and its stored term and vote in one of two
// stores under DataDir/raft. A new data directory gets the WAL
// (hashicorp/raft-wal: preallocated segment files, one fsync per append).
// hashicorp/raft's leader stores a batch before it replicates it, so a
// commit waits for two appends in a row, and a bolt commit (raft-boltdb)
// syncs twice, pages then meta: the WAL halves the disk time of a commit
// (docs/performance.md, "Thirteenth session"). Bolt is what servers wrote
// before; a data directory keeps the store it holds, because neither can
// read the other's files, and servers of one cluster may differ.

// LogStore names a server's Raft log store.
type LogStore string

const (
	// LogStoreAuto keeps the store the data directory holds; a new one
	// gets the WAL.
	LogStoreAuto LogStore = "auto"
	LogStoreWAL  LogStore = "wal"
	LogStoreBolt LogStore = "bolt"
	// logStoreNone is a data directory that holds neither.
	logStoreNone LogStore = ""
)

// ErrLogStoreMismatch marks a requested log store that the data directory
// does not hold.
var ErrLogStoreMismatch = errors.New("log store differs from the data directory's")

// ParseLogStore reads the --raft-log-store flag.
func ParseLogStore(s string) (LogStore, error) {
	switch k := LogStore(s); k {
	case LogStoreAuto, LogStoreWAL, LogStoreBolt:
		return k, nil
	case "":
		return LogStoreAuto, nil
	}
	return "", fmt.Errorf("unknown Raft log store %q (auto, wal or bolt)", s)
}

func boltFile(raftDir string) string { return filepath.Join(raftDir, "raft.db") }
func walDir(raftDir string) string   { return filepath.Join(raftDir, "wal") }

// walMetaFile holds the WAL's segment list and the stored term and vote.
func walMetaFile(raftDir string) string { return filepath.Join(walDir(raftDir), metadb.FileName) }

// StoredLogStore says which log store dataDir holds: LogStoreWAL,
// LogStoreBolt, or "" for none (a new server) or both (damage, which
// CheckDataDir reports).
func StoredLogStore(dataDir string) LogStore {
	held, err := storedLogStore(filepath.Join(dataDir, "raft"))
	if err != nil {
		return logStoreNone
	}
	return held
}

// storedLogStore says which log store raftDir holds; both is damage.
func storedLogStore(raftDir string) (LogStore, error) {
	_, boltErr := os.Lstat(boltFile(raftDir))
	_, walErr := os.Lstat(walDir(raftDir))
	hasBolt, hasWAL := boltErr == nil, walErr == nil
	switch {
	case hasBolt && hasWAL:
		return logStoreNone, errors.New("holds two Raft log stores, raft.db (bolt) and wal/, and either may hold the stored term and vote")
	case hasBolt:
		return LogStoreBolt, nil
	case hasWAL:
		return LogStoreWAL, nil
	}
	return logStoreNone, nil
}

// voteFile is the file of kind that holds the stored term and vote, and
// the bbolt bucket they are in (raft-boltdb's "conf", raft-wal's
// "stable"). A directory without a store is named as the WAL it will get.
func voteFile(raftDir string, kind LogStore) (path, bucket string) {
	if kind == LogStoreBolt {
		return boltFile(raftDir), "conf"
	}
	return walMetaFile(raftDir), metadb.StableBucket
}

// chooseLogStore picks the store to open: want, or with LogStoreAuto the
// one raftDir holds (the WAL for a new directory). Asking for the other
// one is refused: converting in place would mean copying the log and the
// vote, and a server re-synced from the leader gets the same for free.
func chooseLogStore(want LogStore, raftDir, dataDir string) (LogStore, error) {
	held, err := storedLogStore(raftDir)
	if err != nil {
		return "", err
	}
	switch {
	case held == logStoreNone && want == LogStoreAuto:
		return LogStoreWAL, nil
	case held == logStoreNone:
		return want, nil
	case want == LogStoreAuto || want == held:
		return held, nil
	}
	move := "amserver operator data-dir migrate-to-wal moves it to the WAL while the server is stopped"
	if want == LogStoreBolt {
		move = "a data directory moved aside makes the server re-sync from the cluster's leader on bolt"
	}
	return "", fmt.Errorf("%w: --raft-log-store %s, but %s holds a %s log store; leave the flag at auto to keep it, or %s (operations.md §4.2)",
		ErrLogStoreMismatch, want, dataDir, held, move)
}

// openLogStore opens the log and stable store of kind under raftDir;
// segmentSize sizes the WAL's segments (0: raft-wal's default).
func openLogStore(kind LogStore, raftDir string, segmentSize int, logger *slog.Logger) (raft.LogStore, raft.StableStore, func() error, error) {
	if kind == LogStoreBolt {
		bolt, err := openBolt(raftDir)
		if err != nil {
			return nil, nil, nil, err
		}
		return bolt, bolt, bolt.Close, nil
	}
	return openWAL(walDir(raftDir), segmentSize, logger)
}

// openBolt opens raftDir's raft.db. The map freelist and unsynced
// freelist keep bbolt fast after the large truncations that follow
// snapshots (PITFALLS: raft-boltdb).
func openBolt(raftDir string) (*raftboltdb.BoltStore, error) {
	bolt, err := raftboltdb.New(raftboltdb.Options{
		Path: boltFile(raftDir),
		BoltOptions: &bbolt.Options{
			Timeout: 5 * time.Second, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("open raft log store %s: %w", boltFile(raftDir), err)
	}
	return bolt, nil
}
