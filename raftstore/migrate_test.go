package raftstore

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"

	"github.com/amserver/amserver/fsm"
)

// TestMigrateToWAL: a bolt data directory moves to the WAL with its log
// and term, the server then starts on it with all its state (the entries
// after the last snapshot come from the moved log), and a second run has
// nothing to do.
func TestMigrateToWAL(t *testing.T) {
	dir := populatedDataDir(t, LogStoreBolt)
	m, err := MigrateToWAL(t.Context(), dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if m.Last == 0 || m.Last < m.First || m.Term == 0 || m.AlreadyWAL {
		t.Fatalf("migration %+v: moved nothing", m)
	}
	raftDir := filepath.Join(dir, "raft")
	if held, err := storedLogStore(raftDir); err != nil || held != LogStoreWAL {
		t.Fatalf("the directory holds %q (%v) after the migration", held, err)
	}
	if _, err := os.Stat(m.KeptBolt); err != nil {
		t.Errorf("raft.db was not kept aside: %v", err)
	}
	sameEntries(t, m, filepath.Join(raftDir, boltKept), raftDir)
	_, tr := raft.NewInmemTransport("s1")
	f := fsm.New(fsm.Config{})
	s, err := Open(Config{NodeID: "s1", DataDir: dir, Transport: tr}, f)
	if err != nil {
		t.Fatal(err)
	}
	if f.State().Pool("pa") == nil {
		t.Error("the snapshot's state did not come back")
	}
	if term := s.Raft().CurrentTerm(); term < m.Term {
		t.Errorf("term %d after the migration, was %d", term, m.Term)
	}
	_ = s.Shutdown()
	s.Close()
	again, err := MigrateToWAL(t.Context(), dir, slog.New(slog.DiscardHandler))
	if err != nil || !again.AlreadyWAL {
		t.Errorf("second run: %+v, %v; want nothing to do", again, err)
	}
}

// TestMigrateToWALRefuses: a directory in use, one without Raft data and a
// damaged one are refused and left as they were; one a stopped migration
// left with both stores is redone from raft.db.
func TestMigrateToWALRefuses(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	dir := populatedDataDir(t, LogStoreBolt)
	db, err := bbolt.Open(filepath.Join(dir, "raft", "raft.db"), 0o600, nil) // a running server
	if err != nil {
		t.Fatal(err)
	}
	if _, err := MigrateToWAL(t.Context(), dir, logger); !errors.Is(err, ErrInUse) {
		t.Errorf("in use: %v", err)
	}
	_ = db.Close()
	if _, err := MigrateToWAL(t.Context(), t.TempDir(), logger); !errors.Is(err, ErrNoRaftData) {
		t.Errorf("empty: %v", err)
	}
	damaged := populatedDataDir(t, LogStoreBolt)
	if err := os.Truncate(filepath.Join(damaged, "raft", "raft.db"), 4096); err != nil {
		t.Fatal(err)
	}
	if _, err := MigrateToWAL(t.Context(), damaged, logger); !errors.Is(err, ErrDamaged) {
		t.Errorf("damaged: %v", err)
	}
	if _, err := os.Stat(filepath.Join(damaged, "raft", "wal")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused migration wrote a WAL: %v", err)
	}
	// Both stores: a migration stopped between its two renames.
	if err := os.MkdirAll(filepath.Join(dir, "raft", "wal"), 0o700); err != nil {
		t.Fatal(err)
	}
	m, err := MigrateToWAL(t.Context(), dir, logger)
	if err != nil || !m.RebuiltFromBolt || m.Last == 0 {
		t.Fatalf("both stores: %+v, %v; want a migration redone from raft.db", m, err)
	}
	if err := CheckDataDir(dir, false); err != nil {
		t.Errorf("after the redo: %v", err)
	}
}

// sameEntries compares every entry the migration moved with the old
// raft.db, now at kept.
func sameEntries(t *testing.T, m Migration, kept, raftDir string) {
	t.Helper()
	old, err := raftboltdb.New(raftboltdb.Options{Path: kept})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = old.Close() }()
	st, err := OpenStores(Config{NodeID: "s1", DataDir: filepath.Dir(raftDir)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	for i := m.First; i <= m.Last; i++ {
		var a, b raft.Log
		if err := errors.Join(old.GetLog(i, &a), st.Logs.GetLog(i, &b)); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if a.Term != b.Term || a.Type != b.Type || !bytes.Equal(a.Data, b.Data) {
			t.Fatalf("entry %d differs after the migration", i)
		}
	}
}

// TestMigrateToWALAcrossAGap: bolt may hold entries below a gap (Raft
// skips an index when it restores a user's snapshot; the WAL takes no
// gaps). The migration moves the run above the gap when a snapshot covers
// the gap, and refuses a gap no snapshot covers.
func TestMigrateToWALAcrossAGap(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	dir := populatedDataDir(t, LogStoreBolt)
	raftDir := filepath.Join(dir, "raft")
	snaps, err := raft.NewFileSnapshotStore(raftDir, 3, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	metas, err := snaps.List()
	if err != nil || len(metas) == 0 {
		t.Fatalf("snapshots: %v, %v", metas, err)
	}
	covered := metas[0].Index
	punch(t, raftDir, covered)
	m, err := MigrateToWAL(t.Context(), dir, logger)
	if err != nil || m.First != covered+1 {
		t.Fatalf("gap at the snapshot's index %d: %+v, %v; want entries from %d", covered, m, err, covered+1)
	}
	sameEntries(t, m, filepath.Join(raftDir, boltKept), raftDir)

	bare := t.TempDir()
	st, err := OpenStores(Config{NodeID: "s1", DataDir: bare, LogStore: LogStoreBolt})
	if err != nil {
		t.Fatal(err)
	}
	var logs []*raft.Log
	for i := uint64(1); i <= 5; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand})
	}
	if err := errors.Join(st.Logs.StoreLogs(logs), st.Logs.DeleteRange(3, 3), st.Close()); err != nil {
		t.Fatal(err)
	}
	if _, err := MigrateToWAL(t.Context(), bare, logger); err == nil || !strings.Contains(err.Error(), "no snapshot covers") {
		t.Errorf("gap without a snapshot: %v, want refused", err)
	}
	if held, _ := storedLogStore(filepath.Join(bare, "raft")); held != LogStoreBolt {
		t.Errorf("a refused migration left %q", held)
	}
}

// punch deletes raft.db's entry i.
func punch(t *testing.T, raftDir string, i uint64) {
	t.Helper()
	b, err := openBolt(raftDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(b.DeleteRange(i, i), b.Close()); err != nil {
		t.Fatal(err)
	}
}
