package raftstore

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/fsm"
)

// snapshotAt is a valid snapshot whose header says index.
func snapshotAt(t *testing.T, index uint64) []byte {
	t.Helper()
	f := fsm.New(fsm.Config{})
	data, err := fsm.Encode(fsm.UpsertPoolType, &fsm.UpsertPoolRequest{Pool: fsm.Pool{Name: "p"}})
	if err != nil {
		t.Fatal(err)
	}
	f.Apply(&raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: data})
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := fsm.PersistTo(snap, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestRestoreRefusesIndexOutOfRange: Raft places a restore past the file's
// index, so a file claiming an index near the top of the range (crafted,
// or damaged consistently) would wrap Raft's index around; it is refused
// as invalid and changes nothing.
func TestRestoreRefusesIndexOutOfRange(t *testing.T) {
	s := leadingStore(t)
	before := s.Raft().LastIndex()
	for _, index := range []uint64{math.MaxUint64, math.MaxUint64 / 2} {
		err := s.RestoreSnapshot(t.Context(), bytes.NewReader(snapshotAt(t, index)))
		if !errors.Is(err, fsm.ErrInvalid) {
			t.Fatalf("restore of a snapshot at index %d: %v, want invalid", index, err)
		}
	}
	if after := s.Raft().LastIndex(); after != before {
		t.Fatalf("a refused restore moved Raft's last index from %d to %d", before, after)
	}
	if err := s.RestoreSnapshot(t.Context(), bytes.NewReader(snapshotAt(t, 1000))); err != nil {
		t.Fatalf("restore of a snapshot at index 1000: %v", err)
	}
	if got := s.Raft().LastIndex(); got <= 1000 {
		t.Fatalf("after a restore of index 1000, Raft's last index is %d", got)
	}
}
