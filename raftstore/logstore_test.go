package raftstore

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	walfs "github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"

	"github.com/amserver/amserver/fsm"
)

// TestLogStoreFollowsTheDataDir: a new data directory gets the store asked
// for (the WAL by default), an existing one keeps its own and comes back
// with its state in the same process, and asking for the other store is
// refused without touching the directory.
func TestLogStoreFollowsTheDataDir(t *testing.T) {
	cases := []struct {
		name     string
		existing LogStore // "" for a new directory
		want     LogStore
		holds    LogStore // the store the directory holds after
		err      error
	}{
		{"new dir, auto", "", LogStoreAuto, LogStoreWAL, nil},
		{"new dir, bolt", "", LogStoreBolt, LogStoreBolt, nil},
		{"new dir, wal", "", LogStoreWAL, LogStoreWAL, nil},
		{"bolt dir, auto", LogStoreBolt, LogStoreAuto, LogStoreBolt, nil},
		{"wal dir, auto", LogStoreWAL, LogStoreAuto, LogStoreWAL, nil},
		{"wal dir, wal", LogStoreWAL, LogStoreWAL, LogStoreWAL, nil},
		{"bolt dir, wal", LogStoreBolt, LogStoreWAL, LogStoreBolt, ErrLogStoreMismatch},
		{"wal dir, bolt", LogStoreWAL, LogStoreBolt, LogStoreWAL, ErrLogStoreMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.existing != "" {
				dir = populatedDataDir(t, tc.existing)
			}
			_, tr := raft.NewInmemTransport("s1")
			f := fsm.New(fsm.Config{})
			logs := &lockedBuffer{}
			logger := slog.New(slog.NewTextHandler(logs, nil))
			s, err := Open(Config{NodeID: "s1", DataDir: dir, Transport: tr, LogStore: tc.want, Logger: logger}, f)
			if !errors.Is(err, tc.err) {
				t.Fatalf("open: %v, want %v", err, tc.err)
			}
			if err == nil {
				if tc.existing != "" && f.State().Pool("pa") == nil {
					t.Error("the directory's state did not come back")
				}
				if said := "log_store=" + string(tc.holds); !strings.Contains(logs.String(), said) {
					t.Errorf("the server did not log %s:\n%s", said, logs.String())
				}
				if info, err := s.Info(t.Context()); err != nil || info.LogStore != tc.holds {
					t.Errorf("Info says log store %q (%v), want %q", info.LogStore, err, tc.holds)
				}
				_ = s.Shutdown()
				s.Close()
			}
			held, err := storedLogStore(filepath.Join(dir, "raft"))
			if err != nil || held != tc.holds {
				t.Fatalf("the directory holds %q (%v), want %q", held, err, tc.holds)
			}
		})
	}
}

// TestWALKeepsVoteAcrossRestart: the term and vote Raft stores survive a
// close and reopen of the WAL in the same process (raft-wal's Close leaves
// its meta database locked; a reopen would wait for it).
func TestWALKeepsVoteAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	for round := range 2 {
		st, err := OpenStores(Config{NodeID: "s1", DataDir: dir, LogStore: LogStoreWAL})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if round == 0 {
			if err := st.Stable.SetUint64([]byte("CurrentTerm"), 7); err != nil {
				t.Fatal(err)
			}
			if err := st.Logs.StoreLogs([]*raft.Log{{Index: 1, Term: 7, Type: raft.LogCommand, Data: []byte("x")}}); err != nil {
				t.Fatal(err)
			}
		} else {
			term, err := st.Stable.GetUint64([]byte("CurrentTerm"))
			var l raft.Log
			if err != nil || term != 7 {
				t.Errorf("term %d (%v), want 7", term, err)
			}
			if err := st.Logs.GetLog(1, &l); err != nil || string(l.Data) != "x" {
				t.Errorf("log 1: %q (%v)", l.Data, err)
			}
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "raft", "raft.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a WAL directory has a raft.db: %v", err)
	}
}

func TestParseLogStore(t *testing.T) {
	cases := []struct {
		in   string
		want LogStore
		ok   bool
	}{
		{"", LogStoreAuto, true}, {"auto", LogStoreAuto, true}, {"wal", LogStoreWAL, true},
		{"bolt", LogStoreBolt, true}, {"WAL", "", false}, {"boltdb", "", false},
	}
	for _, tc := range cases {
		got, err := ParseLogStore(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("ParseLogStore(%q) = %q, %v; want %q, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestWALTailTruncationSurvivesRestart: a follower whose last entries a
// new leader overwrites truncates its log's tail; after a restart every
// entry before the cut must still read. raft-wal v0.4.0 marked the cut
// segment sealed without writing its index, and the restarted server
// panicked in raft.NewRaft ("sealed segment has no index block"; found by
// make e2e's kill-leader, raft-wal#31).
func TestWALTailTruncationSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	open := func() *Stores {
		st, err := OpenStores(Config{NodeID: "s1", DataDir: dir, LogStore: LogStoreWAL})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	st := open()
	var logs []*raft.Log
	for i := uint64(1); i <= 10; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte{byte(i)}})
	}
	if err := st.Logs.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := st.Logs.DeleteRange(8, 10); err != nil {
		t.Fatal(err)
	}
	if err := st.Logs.StoreLogs([]*raft.Log{{Index: 8, Term: 2, Type: raft.LogCommand, Data: []byte{80}}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = open()
	defer func() { _ = st.Close() }()
	if last, err := st.Logs.LastIndex(); err != nil || last != 8 {
		t.Fatalf("last index %d (%v), want 8", last, err)
	}
	for i := uint64(1); i <= 8; i++ {
		var l raft.Log
		if err := st.Logs.GetLog(i, &l); err != nil {
			t.Fatalf("log %d after the restart: %v", i, err)
		}
		if want := map[bool]uint64{true: 2, false: 1}[i == 8]; l.Term != want {
			t.Errorf("log %d: term %d, want %d", i, l.Term, want)
		}
	}
}

// TestWALFinishesARotationAStopCutShort: a server killed after an append
// sealed a segment and before the meta database recorded the seal must
// take appends again when it restarts (raft-wal leaves its tail refusing
// them: "segment is sealed"), with every entry kept.
func TestWALFinishesARotationAStopCutShort(t *testing.T) {
	w := sealOneSegment(t)
	segs := walSegments(t, w.walPath).Segments
	if tail := segs[len(segs)-1]; !sealedButOpen(t, w.walPath, tail) {
		unrotate(t, w.walPath)
	}
	w.appendAndReadBack(t)
}

// TestWALRotationBeforeItsFile: a stop after a rotation listed the next
// segment and before its file was written leaves that file missing: not
// damage (it held nothing), and the server takes appends again.
func TestWALRotationBeforeItsFile(t *testing.T) {
	w := sealOneSegment(t)
	if err := w.reopen().Close(); err != nil { // finishes the rotation if the stop cut it short
		t.Fatal(err)
	}
	segs := walSegments(t, w.walPath).Segments
	if err := os.Remove(filepath.Join(w.walPath, segment.FileName(segs[len(segs)-1]))); err != nil {
		t.Fatal(err)
	}
	if err := CheckDataDir(w.dir, false); err != nil {
		t.Fatalf("a next segment not yet created reads as %v", err)
	}
	w.appendAndReadBack(t)
}

// walRig is a WAL data directory on 4 KiB segments, whose entries are
// 900 bytes, each one's bytes its index.
type walRig struct {
	t            *testing.T
	dir, walPath string
	last         uint64
}

func (w *walRig) reopen() *Stores {
	st, err := OpenStores(Config{NodeID: "s1", DataDir: w.dir, LogStore: LogStoreWAL, walSegmentSize: 4 << 10})
	if err != nil {
		w.t.Fatal(err)
	}
	return st
}

func (w *walRig) appendOne(st *Stores) {
	w.last++
	l := &raft.Log{Index: w.last, Term: 1, Type: raft.LogCommand, Data: bytes.Repeat([]byte{byte(w.last)}, 900)}
	if err := st.Logs.StoreLogs([]*raft.Log{l}); err != nil {
		w.t.Fatalf("store %d: %v", w.last, err)
	}
}

// sealOneSegment appends one entry a run until one seals a segment. The
// stop right after it either cut the rotation short or came after it.
func sealOneSegment(t *testing.T) *walRig {
	dir := t.TempDir()
	w := &walRig{t: t, dir: dir, walPath: filepath.Join(dir, "raft", "wal")}
	for {
		st := w.reopen()
		w.appendOne(st)
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		segs := walSegments(t, w.walPath).Segments
		if tail := segs[len(segs)-1]; (len(segs) >= 2 && tail.BaseIndex == w.last+1) || sealedButOpen(t, w.walPath, tail) {
			return w
		}
	}
}

// appendAndReadBack appends one more entry, restarts, and reads them all.
func (w *walRig) appendAndReadBack(t *testing.T) {
	st := w.reopen()
	w.appendOne(st)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = w.reopen()
	defer func() { _ = st.Close() }()
	for i := uint64(1); i <= w.last; i++ {
		var l raft.Log
		if err := st.Logs.GetLog(i, &l); err != nil || len(l.Data) != 900 || l.Data[0] != byte(i) {
			t.Fatalf("log %d: %d bytes (%v)", i, len(l.Data), err)
		}
	}
}

// walMeta opens the meta database of the WAL in dir; the caller closes it.
func walMeta(t *testing.T, dir string) (*metadb.BoltMetaDB, types.PersistentState) {
	t.Helper()
	meta := &metadb.BoltMetaDB{}
	state, err := meta.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return meta, state
}

func walSegments(t *testing.T, dir string) types.PersistentState {
	t.Helper()
	meta, state := walMeta(t, dir)
	_ = meta.Close()
	return state
}

// unrotate puts a WAL whose last rotation completed back in the state a
// kill before the meta database's commit leaves: the sealed segment
// listed open, no next segment, and no file for it.
func unrotate(t *testing.T, dir string) {
	t.Helper()
	meta, state := walMeta(t, dir)
	defer func() { _ = meta.Close() }()
	n := len(state.Segments)
	if err := os.Remove(filepath.Join(dir, segment.FileName(state.Segments[n-1]))); err != nil {
		t.Fatal(err)
	}
	state.Segments = state.Segments[:n-1]
	tail := &state.Segments[n-2]
	tail.SealTime, tail.IndexStart, tail.MaxIndex = time.Time{}, 0, 0
	state.NextSegmentID--
	if err := meta.CommitState(state); err != nil {
		t.Fatal(err)
	}
}

// sealedButOpen says whether the segment the meta database lists open
// holds its index: a rotation a stop cut short.
func sealedButOpen(t *testing.T, dir string, tail types.SegmentInfo) bool {
	t.Helper()
	if !tail.SealTime.IsZero() {
		return false
	}
	sw, err := segment.NewFiler(dir, walfs.New()).RecoverTail(tail)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sw.Close() }()
	sealed, _, err := sw.Sealed()
	if err != nil {
		t.Fatal(err)
	}
	return sealed
}

// TestWALSegmentsWithoutTheirList: a WAL that lost its meta database is
// damage even without snapshots (a young server): raft-wal would start an
// empty log and delete the segments, acknowledged entries and all.
func TestWALSegmentsWithoutTheirList(t *testing.T) {
	dir := t.TempDir()
	st, err := OpenStores(Config{NodeID: "s1", DataDir: dir, LogStore: LogStoreWAL})
	if err != nil {
		t.Fatal(err)
	}
	l := &raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("acknowledged")}
	if err := errors.Join(st.Logs.StoreLogs([]*raft.Log{l}), st.Close()); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(walMetaFile(filepath.Join(dir, "raft"))); err != nil {
		t.Fatal(err)
	}
	if err := CheckDataDir(dir, true); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "log segments") {
		t.Fatalf("check: %v, want the lost segment list as damage", err)
	}
}

// lockedBuffer is a log sink that Raft's goroutines write while the test
// reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
