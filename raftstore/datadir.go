package raftstore

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc64"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.etcd.io/bbolt"
)

// A data directory is checked before bbolt or Raft open it, because both
// trust their files: bbolt maps raft.db (or the WAL's wal-meta.db) and
// faults (SIGBUS) on a truncated one, and Raft panics ("log not found") when a snapshot it needs has no
// readable meta.json (PITFALLS: data directories). A damaged directory is a
// clear error naming the file and the way out, never a crash.

// ErrDamaged marks a data directory that must not be opened as it is.
var ErrDamaged = errors.New("damaged data directory")

// Problem is one thing wrong with a data directory.
type Problem struct {
	File string
	What string
}

// DamageError lists what CheckDataDir found; it wraps ErrDamaged.
type DamageError struct {
	DataDir  string
	Problems []Problem
}

func (e *DamageError) Error() string {
	p := e.Problems[0]
	more := ""
	if n := len(e.Problems) - 1; n > 0 {
		more = fmt.Sprintf(" (and %d more problem%s)", n, map[bool]string{true: "s", false: ""}[n > 1])
	}
	return fmt.Sprintf("%s: %s%s; run `amserver operator data-dir check --data-dir %s` to see every problem, "+
		"then wipe the data directory and start the server again with the same flags to re-sync it from the cluster's leader",
		p.File, p.What, more, e.DataDir)
}

func (e *DamageError) Unwrap() error { return ErrDamaged }

// CheckDataDir inspects dataDir's Raft files without opening them the way
// bbolt and Raft would. recoverVote accepts a log store whose stored term
// and vote are gone (an empty or missing raft.db next to snapshots), which a
// server must not do silently: it could vote twice in one term.
func CheckDataDir(dataDir string, recoverVote bool) error {
	dir := filepath.Join(dataDir, "raft")
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil // a new server
	}
	kind, bothErr := storedLogStore(dir)
	db, bucket := voteFile(dir, kind)
	// With both stores either may be a running server's: never call it
	// damage. On a bolt directory the vote file is raft.db: ask once.
	for _, f := range slices.Compact([]string{db, boltFile(dir)}) {
		if err := checkNotInUse(dataDir, f); err != nil {
			return err
		}
	}
	var probs []Problem
	snaps, snapProbs := checkSnapshots(filepath.Join(dir, "snapshots"))
	probs = append(probs, snapProbs...)
	if bothErr != nil {
		return &DamageError{DataDir: dataDir, Problems: append(probs, Problem{dir, bothErr.Error()})}
	}
	fi, err := os.Stat(db)
	switch {
	case kind == logStoreNone:
		if snaps > 0 && !recoverVote {
			probs = append(probs, Problem{dir, "no log store (raft.db or wal/) next to snapshots, so the stored term and vote are lost " +
				"(start with --recover to accept that)"})
		}
	case errors.Is(err, os.ErrNotExist) || (err == nil && fi.Size() == 0):
		if n := walSegmentFiles(dir, kind); n > 0 {
			// raft-wal would start an empty log and delete the segments.
			probs = append(probs, Problem{db, fmt.Sprintf("missing or empty next to %d log segments, so their list and the stored term and vote are lost", n)})
			break
		}
		if snaps > 0 && !recoverVote {
			probs = append(probs, Problem{db, "the log store is empty or missing next to snapshots, so the stored term and vote are lost " +
				"(start with --recover to accept that)"})
		}
	case err != nil:
		probs = append(probs, Problem{db, err.Error()})
	default:
		what := checkBolt(db, fi.Size())
		if what == "" && snaps > 0 && !recoverVote {
			what = checkVote(db, bucket)
		}
		if what != "" {
			probs = append(probs, Problem{db, what})
		} else if kind == LogStoreWAL {
			probs = append(probs, checkWALSegments(db)...)
		}
	}
	if len(probs) == 0 {
		return checkSnapshotFormats(dataDir, filepath.Join(dir, "snapshots"))
	}
	return &DamageError{DataDir: dataDir, Problems: probs}
}

// checkVote says whether a structurally sound log store next to snapshots
// still holds the current term: one that lost it (recreated empty) would
// let the server vote again in a term it voted in.
func checkVote(path, bucket string) string {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return "unreadable: " + err.Error()
	}
	defer func() { _ = db.Close() }()
	found := false
	_ = db.View(func(tx *bbolt.Tx) error {
		if b := tx.Bucket([]byte(bucket)); b != nil {
			found = b.Get([]byte("CurrentTerm")) != nil
		}
		return nil
	})
	if !found {
		return "the log store holds no stored term next to snapshots, so the stored term and vote are lost " +
			"(start with --recover to accept that)"
	}
	return ""
}

// bbolt's file format: a page header of 16 bytes, then the meta.
const (
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	boltPageHeader = 16
	boltMetaSum    = 56 // bytes of the meta before its checksum
	boltMinPage    = 1024
)

type boltMeta struct {
	pageSize uint32
	pgid     uint64 // high-water mark: pages [0, pgid) are in the file
	txid     uint64
}

// checkBolt returns what is wrong with a bbolt file, "" when nothing is.
func checkBolt(path string, size int64) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	m0, err0 := readBoltMeta(f, 0)
	pageSize := int64(4096)
	if err0 == nil {
		pageSize = int64(m0.pageSize)
	}
	m1, err1 := readBoltMeta(f, pageSize)
	var best *boltMeta
	for _, m := range []*boltMeta{m0, m1} {
		if m != nil && (best == nil || m.txid > best.txid) {
			best = m
		}
	}
	if best == nil {
		return fmt.Sprintf("not a valid log store: neither meta page checks out (%v; %v)", err0, err1)
	}
	if need := int64(best.pgid) * int64(best.pageSize); size < need {
		return fmt.Sprintf("truncated: %d of %d bytes", size, need)
	}
	return ""
}

// readBoltMeta reads and checks the meta page at off.
func readBoltMeta(r io.ReaderAt, off int64) (*boltMeta, error) {
	buf := make([]byte, boltPageHeader+boltMetaSum+8)
	if _, err := r.ReadAt(buf, off); err != nil {
		return nil, fmt.Errorf("meta at %d unreadable: %w", off, err)
	}
	m := buf[boltPageHeader:]
	le := binary.LittleEndian
	if le.Uint32(m[0:]) != boltMagic {
		return nil, fmt.Errorf("meta at %d: bad magic", off)
	}
	if le.Uint32(m[4:]) != boltVersion {
		return nil, fmt.Errorf("meta at %d: version %d", off, le.Uint32(m[4:]))
	}
	h := fnv.New64a()
	_, _ = h.Write(m[:boltMetaSum])
	if h.Sum64() != le.Uint64(m[boltMetaSum:]) {
		return nil, fmt.Errorf("meta at %d: checksum mismatch", off)
	}
	bm := &boltMeta{pageSize: le.Uint32(m[8:]), pgid: le.Uint64(m[40:]), txid: le.Uint64(m[48:])}
	if bm.pageSize < boltMinPage || bm.pageSize&(bm.pageSize-1) != 0 {
		return nil, fmt.Errorf("meta at %d: page size %d", off, bm.pageSize)
	}
	return bm, nil
}

// snapshotMeta is the part of raft's meta.json this check reads.
type snapshotMeta struct {
	ID   string
	Size int64
	CRC  []byte
}

// checkSnapshots checks every finished snapshot under dir (raft skips
// ".tmp" ones, and so does this) and returns how many are sound.
func checkSnapshots(dir string) (int, []Problem) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, []Problem{{dir, err.Error()}}
	}
	sound := 0
	var probs []Problem
	for _, e := range entries {
		if !e.IsDir() || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		if p := checkSnapshot(filepath.Join(dir, e.Name())); p != nil {
			probs = append(probs, *p)
			continue
		}
		sound++
	}
	return sound, probs
}

func checkSnapshot(dir string) *Problem {
	metaPath := filepath.Join(dir, "meta.json")
	raw, err := os.ReadFile(metaPath)
	if err != nil {
		return &Problem{metaPath, "snapshot metadata unreadable: " + err.Error()}
	}
	var meta snapshotMeta
	if err := json.Unmarshal(raw, &meta); err != nil || meta.ID == "" || len(meta.CRC) == 0 {
		return &Problem{metaPath, "snapshot metadata is not valid"}
	}
	statePath := filepath.Join(dir, "state.bin")
	f, err := os.Open(statePath)
	if err != nil {
		return &Problem{statePath, "snapshot data unreadable: " + err.Error()}
	}
	defer f.Close()
	h := crc64.New(crc64.MakeTable(crc64.ECMA))
	n, err := io.Copy(h, f)
	switch {
	case err != nil:
		return &Problem{statePath, "snapshot data unreadable: " + err.Error()}
	case n != meta.Size:
		return &Problem{statePath, fmt.Sprintf("snapshot data is %d bytes, its metadata says %d", n, meta.Size)}
	case !bytes.Equal(h.Sum(nil), meta.CRC):
		return &Problem{statePath, "snapshot data does not match its checksum"}
	}
	return nil
}
