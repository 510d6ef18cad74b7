package fsm

import (
	"github.com/hashicorp/raft"
)

// The open write transaction (FSM.ApplyBatch). A replica that nobody reads
// from between entries, a follower or a state being loaded, applies entry
// after entry into one transaction, as a batch would; any read commits it
// first, so a reader sees every command whose result Apply has returned.
// A reader that finds it open waits for the command in flight, never for
// the rest of a batch: wmu is taken per command.

// maxOpenCommands bounds the commands one open transaction holds, and so
// the work of a redo.
const maxOpenCommands = 256

// applyOpen applies one command in the open transaction (starting one if
// none is open) and returns its result.
func (f *FSM) applyOpen(l *raft.Log, changed map[string]bool) *Result {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	if f.open == nil {
		f.mu.RLock()
		f.open = f.db.Txn(true)
		f.mu.RUnlock()
		f.hasOpen.Store(true)
	}
	finished := false
	defer func() {
		if !finished { // a panic: keep what the earlier commands wrote
			f.redoOpen()
			f.markApplied(l)
		}
	}()
	res, dirty := f.applyOne(f.open, l, changed)
	finished = true
	switch {
	case dirty:
		f.redoOpen()
	case len(f.openLogs)+1 >= maxOpenCommands:
		f.commitOpen()
	default:
		f.openLogs = append(f.openLogs, l)
	}
	f.markApplied(l)
	return res
}

// markApplied records l as the last entry applied; wmu held, so that a
// snapshot (Snapshot) takes the index and term of one entry.
func (f *FSM) markApplied(l *raft.Log) {
	f.applied.Store(l.Index)
	f.appliedTerm.Store(l.Term)
}

// redoOpen throws the open transaction away and commits its earlier
// commands again in a fresh one: they are deterministic, so they write
// what they wrote, and the command that failed leaves no trace.
func (f *FSM) redoOpen() {
	logs := f.openLogs
	f.openLogs = nil // dropOpen clears the slice it holds
	f.dropOpen()
	if len(logs) == 0 {
		return
	}
	f.mu.RLock()
	txn := f.db.Txn(true)
	f.mu.RUnlock()
	for _, l := range logs {
		f.applyOne(txn, l, map[string]bool{})
	}
	txn.Commit()
}

// commitOpen commits the open transaction, if any; wmu held.
func (f *FSM) commitOpen() {
	if f.open == nil {
		return
	}
	f.open.Commit()
	f.visible.Store(f.applied.Load()) // the command in flight, if any, is not counted: a later read flushes again
	f.clearOpen()
}

// dropOpen aborts the open transaction, if any; wmu held.
func (f *FSM) dropOpen() {
	if f.open == nil {
		return
	}
	f.open.Abort()
	f.clearOpen()
}

func (f *FSM) clearOpen() {
	f.open = nil
	clear(f.openLogs) // let the entries go
	f.openLogs = f.openLogs[:0]
	f.hasOpen.Store(false)
}

// flushOpen commits the open transaction before a read. The flag keeps
// reads from taking wmu while nothing is open.
func (f *FSM) flushOpen() {
	if !f.hasOpen.Load() {
		return
	}
	f.wmu.Lock()
	f.commitOpen()
	f.wmu.Unlock()
}

// AppliedIndex is the index of the last entry this replica applied,
// visible or in the open transaction; reading it commits nothing. Raft's
// own applied index moves when it hands a batch to the FSM, before the
// FSM applied it.
func (f *FSM) AppliedIndex() uint64 { return f.applied.Load() }

// OpenEntries is how many applied commands the open transaction holds,
// not yet visible to a read until one comes: a diagnostic (a follower
// nobody reads from keeps it above zero).
func (f *FSM) OpenEntries() int {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	return len(f.openLogs)
}
