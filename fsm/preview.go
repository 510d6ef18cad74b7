package fsm

import "fmt"

// Preview runs one encoded command against the current state as if it were
// the entry at index, and throws the outcome away: nothing is committed and
// no watcher wakes. The fault suite's planted early-acknowledgement bug uses
// it to answer before Raft commits; correct code never needs it.
func (f *FSM) Preview(index uint64, data []byte) *Result {
	if len(data) == 0 {
		return &Result{Index: index, Err: fmt.Errorf("%w: empty command", ErrInvalid)}
	}
	f.flushOpen() // the store allows one write transaction at a time
	f.mu.RLock()
	db := f.db
	f.mu.RUnlock()
	typ := MessageType(data[0])
	h := f.handlers[typ]
	if h == nil {
		return &Result{Index: index, Err: fmt.Errorf("%w: unknown command type %d", ErrInvalid, typ)}
	}
	t := newTx(db.Txn(true), index)
	defer t.txn.Abort()
	value, err := f.dispatch(h, typ, t, data[1:])
	if err != nil {
		return &Result{Index: index, Err: err}
	}
	res := &Result{Index: index, Value: value}
	if c, ok := value.(created); ok {
		res.Value, res.Created = c.bundle, c.isNew
	}
	return res
}
