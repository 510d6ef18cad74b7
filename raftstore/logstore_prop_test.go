package raftstore

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"github.com/hashicorp/raft"
	"pgregory.net/rapid"
)

// walModel is what a Raft log store must hold: the entries from first to
// last, none when first is 0.
type walModel struct {
	first, last uint64
	entries     map[uint64]raft.Log
}

// TestPropertyWALMatchesModel drives the WAL through what hashicorp/raft
// asks of a log store (appends, a follower's tail truncation, compaction,
// the whole log dropped for a snapshot install and an append at any index
// after it) with restarts in between, on segments small enough that most
// operations cross one, and checks every entry against a model after each
// step. raft-wal v0.4.0 failed this (the tail truncation, raft-wal#31).
func TestPropertyWALMatchesModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		dir, err := os.MkdirTemp(t.TempDir(), "wal")
		if err != nil {
			rt.Fatal(err)
		}
		w := &walRun{rt: rt, dir: dir, m: walModel{entries: map[uint64]raft.Log{}}}
		w.open()
		defer func() { _ = w.st.Close() }()
		rt.Repeat(map[string]func(*rapid.T){
			"append":        w.appendEntries,
			"truncate tail": w.truncateTail,
			"compact":       w.compact,
			"drop all":      w.dropAll,
			"restart": func(*rapid.T) {
				if err := w.st.Close(); err != nil {
					rt.Fatal(err)
				}
				w.open()
			},
			"": w.check,
		})
	})
}

type walRun struct {
	rt   *rapid.T
	dir  string
	st   *Stores
	m    walModel
	term uint64
}

func (w *walRun) open() {
	st, err := OpenStores(Config{NodeID: "s1", DataDir: w.dir, LogStore: LogStoreWAL, walSegmentSize: 4 << 10})
	if err != nil {
		w.rt.Fatalf("open: %v", err)
	}
	w.st = st
}

func (w *walRun) appendEntries(t *rapid.T) {
	next := w.m.last + 1
	if w.m.first == 0 {
		next = w.m.last + 1 + rapid.Uint64Range(0, 50).Draw(t, "gap after a dropped log")
	}
	w.term++
	var logs []*raft.Log
	for i := range rapid.IntRange(1, 6).Draw(t, "entries") {
		size := rapid.IntRange(0, 1500).Draw(t, "size")
		l := raft.Log{Index: next + uint64(i), Term: w.term, Type: raft.LogCommand, Data: bytes.Repeat([]byte{byte(w.term)}, size)}
		logs = append(logs, &l)
	}
	if err := w.st.Logs.StoreLogs(logs); err != nil {
		t.Fatalf("store %d..%d: %v", next, logs[len(logs)-1].Index, err)
	}
	if w.m.first == 0 {
		w.m.first = next
	}
	for _, l := range logs {
		w.m.entries[l.Index] = *l
		w.m.last = l.Index
	}
}

// truncateTail is a follower dropping entries a new leader overwrites.
func (w *walRun) truncateTail(t *rapid.T) {
	if w.m.first == 0 || w.m.last == w.m.first {
		t.Skip("nothing to keep before a cut")
	}
	from := rapid.Uint64Range(w.m.first+1, w.m.last).Draw(t, "from")
	if err := w.st.Logs.DeleteRange(from, w.m.last); err != nil {
		t.Fatalf("delete %d..%d: %v", from, w.m.last, err)
	}
	for i := from; i <= w.m.last; i++ {
		delete(w.m.entries, i)
	}
	w.m.last = from - 1
}

// compact is the truncation after a snapshot, keeping a tail.
func (w *walRun) compact(t *rapid.T) {
	if w.m.first == 0 || w.m.last == w.m.first {
		t.Skip("nothing to compact")
	}
	to := rapid.Uint64Range(w.m.first, w.m.last-1).Draw(t, "to")
	if err := w.st.Logs.DeleteRange(w.m.first, to); err != nil {
		t.Fatalf("delete %d..%d: %v", w.m.first, to, err)
	}
	for i := w.m.first; i <= to; i++ {
		delete(w.m.entries, i)
	}
	w.m.first = to + 1
}

// dropAll is what Raft does to a monotonic store when it installs a
// snapshot: every entry goes, and the next append is past the snapshot.
func (w *walRun) dropAll(t *rapid.T) {
	if w.m.first == 0 {
		t.Skip("empty")
	}
	if err := w.st.Logs.DeleteRange(w.m.first, w.m.last); err != nil {
		t.Fatalf("delete all %d..%d: %v", w.m.first, w.m.last, err)
	}
	w.m.entries = map[uint64]raft.Log{}
	w.m.first = 0
}

func (w *walRun) check(t *rapid.T) {
	first, err1 := w.st.Logs.FirstIndex()
	last, err2 := w.st.Logs.LastIndex()
	if err1 != nil || err2 != nil {
		t.Fatalf("first/last: %v, %v", err1, err2)
	}
	wantLast := w.m.last
	if w.m.first == 0 {
		wantLast = 0
	}
	if first != w.m.first || last != wantLast {
		t.Fatalf("first %d last %d, want %d %d", first, last, w.m.first, wantLast)
	}
	for i, want := range w.m.entries {
		var got raft.Log
		if err := w.st.Logs.GetLog(i, &got); err != nil {
			t.Fatalf("log %d: %v", i, err)
		}
		if got.Term != want.Term || !bytes.Equal(got.Data, want.Data) {
			t.Fatalf("log %d: %s, want %s", i, describe(got), describe(want))
		}
	}
}

func describe(l raft.Log) string { return fmt.Sprintf("term %d, %d bytes", l.Term, len(l.Data)) }
