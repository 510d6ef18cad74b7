package fsm

import (
	"github.com/hashicorp/go-memdb"
	"github.com/hashicorp/raft"
)

// The open write transaction (FSM.ApplyBatch). A replica that nobody reads
// from between entries, a follower or a state being loaded, applies entry
// after entry into one transaction, as a batch would; any read commits it
// first, so a reader sees every command whose result Apply has returned.
// A reader that finds it open waits for the command in flight, never for
// the rest of a batch: wmu is taken per command.

// maxOpenCommands bounds the commands one open transaction holds, and so
// the work of a redo and the memory its writable-node caches pin.
const maxOpenCommands = 256

// applyOpen applies one command in the open transaction (starting one if
// none is open) and returns its result.
func (f *FSM) applyOpen(l *raft.Log, changed map[string]bool) *Result {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	if f.open == nil {
		f.mu.RLock()
		f.open = f.db.Txn(true)
		f.openView.base = f.db.Txn(false) // what open started on: no commit can come between
		f.mu.RUnlock()
		f.hasOpen.Store(true)
	}
	finished := false
	defer func() {
		if !finished { // a panic: keep what the earlier commands wrote
			f.redoOpen()
			f.applied.Store(l.Index)
		}
	}()
	res, dirty := f.applyOne(f.open, &f.openView, l, changed)
	finished = true
	switch {
	case dirty:
		f.redoOpen()
	case len(f.openLogs)+1 >= maxOpenCommands:
		f.commitOpen()
	default:
		f.openLogs = append(f.openLogs, l)
	}
	f.applied.Store(l.Index)
	return res
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
		f.applyOne(txn, nil, l, map[string]bool{})
	}
	txn.Commit()
}

// commitOpen commits the open transaction, if any; wmu held.
func (f *FSM) commitOpen() {
	if f.open == nil {
		return
	}
	f.open.Commit()
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
	f.openView.base = nil
	clear(f.openView.written)
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

// openView lets a command in the open transaction read rows without going
// through it. go-memdb answers a read of an index the transaction has
// modified from a clone of that index, and cloning throws away the index's
// writable-node cache: the next write copies its path from the root again
// and builds a new cache. A create's existence check, and a plan's reads of
// each bundle, node and assignment it then writes, did that per row. A row
// the open transaction has not written is the same row in the state it
// started on, so Node, Bundle and Assignment read it there.
type openView struct {
	base    *memdb.Txn // a read transaction of the state open started on
	written map[rowKey]struct{}
}

type rowKey struct{ table, id string }

// wrote records a write of one of the rows the view serves; every write of
// the state goes through tx.insert and tx.delete, which call it.
func (v *openView) wrote(table string, obj any) {
	if v == nil || v.base == nil {
		return
	}
	id, ok := viewRowID(obj)
	if !ok {
		return
	}
	if v.written == nil {
		v.written = map[rowKey]struct{}{}
	}
	v.written[rowKey{table, id}] = struct{}{}
}

// viewRowID is the id of a row type the view serves.
func viewRowID(obj any) (string, bool) {
	switch r := obj.(type) {
	case *Bundle:
		return r.Spec.ID, true
	case *Node:
		return r.ID, true
	case *Assignment:
		return r.ID, true
	}
	return "", false
}

// byID reads a row by id: from the view's base when the open transaction
// has not written it, else from the transaction itself.
func byID[T any](s *State, table, id string) *T {
	if v := s.view; v != nil && v.base != nil {
		if _, ok := v.written[rowKey{table, id}]; !ok {
			return first[T](v.base, table, "id", id)
		}
	}
	return first[T](s.txn, table, "id", id)
}
