package raftstore

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"

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
			s, err := Open(Config{NodeID: "s1", DataDir: dir, Transport: tr, LogStore: tc.want}, f)
			if !errors.Is(err, tc.err) {
				t.Fatalf("open: %v, want %v", err, tc.err)
			}
			if err == nil {
				if tc.existing != "" && f.State().Pool("pa") == nil {
					t.Error("the directory's state did not come back")
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
