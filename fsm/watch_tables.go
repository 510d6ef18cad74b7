package fsm

import "sync"

// tableWatches wakes readers that care about one table only. WatchCh wakes
// at every change, and the reader then reads the state, which commits the
// open write transaction (fsm_open.go): a watcher that runs on every server
// (the keyring) did that on each follower at every batch, and the
// followers paid a commit per entry instead of one per 256.
type tableWatches struct {
	mu  sync.Mutex
	chs map[string]chan struct{}
}

// ch is the channel closed at the table's next change.
func (w *tableWatches) ch(table string) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, ok := w.chs[table]
	if !ok {
		if w.chs == nil {
			w.chs = map[string]chan struct{}{}
		}
		c = make(chan struct{})
		w.chs[table] = c
	}
	return c
}

// fire closes the channels of the tables that changed.
func (w *tableWatches) fire(changed map[string]bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for table, c := range w.chs {
		if changed[table] {
			close(c)
			delete(w.chs, table)
		}
	}
}

// fireAll closes every channel: a restore may have changed any table.
func (w *tableWatches) fireAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for table, c := range w.chs {
		close(c)
		delete(w.chs, table)
	}
}

// WatchKeyring returns a channel closed at the next committed change of the
// keyring (or a restore). As with WatchCh, take the channel before the view
// (State): a change that view does not hold closes the channel taken. The
// keyring watcher runs on every server and reads the state only when this
// fires, which leaves a follower's open transaction open across entries.
func (f *FSM) WatchKeyring() <-chan struct{} {
	return f.tables.ch(tableKeyring)
}
