package fsm

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/amserver/amserver/internal/memlimit"
	"github.com/amserver/amserver/internal/rowstore"
	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"

	"github.com/amserver/amserver/snapshot"
)

// section describes how one table is stored in a snapshot. Kinds are
// append-only, like command types: a kind whose meaning changes gets a new
// number, so an older server refuses a snapshot it would misread ("unknown
// section") instead of restoring it wrongly.
type section struct {
	kind  uint8
	table string
	row   func() any
	// keep, when set, filters the rows read back; readOnly sections are
	// never written (older snapshots only).
	keep     func(row any) bool
	readOnly bool
	// encode and decode replace msgpack with the row codec (rowcodec.go).
	encode func(dst []byte, row any) []byte
	decode func(d *rowDec) (any, error)
}

var sections = []section{
	{kind: 1, table: tableNodes, row: func() any { return &Node{} }},
	{kind: 2, table: tablePools, row: func() any { return &Pool{} }},
	// Kinds 3 and 5 held bundles and assignments in msgpack; 11 and 12 in the
	// row codec's positional layout; 16 and 17 in its numbered-field layout,
	// where a field can be added without a new kind.
	{kind: 3, table: tableBundles, row: func() any { return &Bundle{} }, readOnly: true},
	{kind: 11, table: tableBundles, decode: func(d *rowDec) (any, error) { return decodeBundleRowV1(d) }, readOnly: true},
	{kind: 16, table: tableBundles, encode: func(dst []byte, row any) []byte { return encodeBundleRow(dst, row.(*Bundle)) },
		decode: func(d *rowDec) (any, error) { return decodeBundleRow(d) }},
	// Kind 4 held every reservation. Bundles' reservations are now derived
	// from the bundles (reservations.go), so only node services' rows of an
	// old snapshot are kept; kind 10 holds just those.
	{kind: 4, table: tableReservations, row: func() any { return &reservationRow{} }, keep: serviceRow, readOnly: true},
	{kind: 10, table: tableReservations, row: func() any { return &reservationRow{} }},
	{kind: 5, table: tableAssignments, row: func() any { return &Assignment{} }, readOnly: true},
	{kind: 12, table: tableAssignments, decode: func(d *rowDec) (any, error) { return decodeAssignmentRowV1(d) }, readOnly: true},
	{kind: 17, table: tableAssignments, encode: func(dst []byte, row any) []byte { return encodeAssignmentRow(dst, row.(*Assignment)) },
		decode: func(d *rowDec) (any, error) { return decodeAssignmentRow(d) }},
	{kind: 6, table: tableServices, row: func() any { return &NodeService{} }},
	{kind: 7, table: tableEvents, row: func() any { return &eventRow{} }},
	{kind: 15, table: tableSpawns, row: func() any { return &Spawn{} }},
	{kind: 8, table: tableMeta, row: func() any { return &metaRow{} }},
	{kind: 13, table: tableACLTokens, row: func() any { return &ACLToken{} }},
	{kind: 14, table: tableKeyring, row: func() any { return &Keyring{} }},
	// Kinds 18 and 19: templates and their archives (DESIGN §2.3a).
	{kind: 18, table: tableTemplates, row: func() any { return &Template{} }},
	{kind: 19, table: tableBlobs, row: func() any { return &TemplateBlob{} }},
	// Kind 20: cluster and cap group caps; their usage is rebuilt from the
	// pools' on restore (rebuildScopeUsage).
	{kind: 20, table: tableCaps, row: func() any { return &CapScope{} }},
	{kind: 9, table: tableIndex, row: func() any { return &indexRow{} }},
}

func serviceRow(row any) bool {
	r, ok := row.(*reservationRow)
	return ok && isServiceKey(r.Reservation.Key)
}

func sectionByKind(kind uint8) (section, bool) {
	for _, s := range sections {
		if s.kind == kind {
			return s, true
		}
	}
	return section{}, false
}

// fsmSnapshot is a point-in-time store version; Persist runs off the FSM's
// goroutine while Apply continues.
type fsmSnapshot struct {
	db  *rowstore.DB
	hdr snapshot.Header // index and term of the last entry it holds, when it was taken
}

var _ raft.FSMSnapshot = (*fsmSnapshot)(nil)

// Snapshot implements raft.FSM.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	// wmu keeps entries out while the state and the entry it ends at are
	// taken: a snapshot the API asks for runs beside Apply, and with the
	// index read after the state, the file named an entry it did not hold.
	f.wmu.Lock()
	defer f.wmu.Unlock()
	f.commitOpen()
	f.mu.RLock()
	defer f.mu.RUnlock()
	hdr := snapshot.Header{Index: f.applied.Load(), Term: f.appliedTerm.Load(), CreatedUnixNano: time.Now().UnixNano()}
	return &fsmSnapshot{db: f.db.Snapshot(), hdr: hdr}, nil
}

// Persist implements raft.FSMSnapshot.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := writeSnapshot(sink, s.db, s.hdr); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

// Release implements raft.FSMSnapshot.
func (s *fsmSnapshot) Release() {}

// Restore implements raft.FSM: it builds a fresh store from the snapshot and
// swaps it in only when the whole snapshot read back with a valid checksum,
// so nothing of the previous state survives and a bad file changes nothing.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	// The new state is built beside the old: a heap limit that follows
	// the live heap would collect every few hundred MiB of it.
	defer memlimit.Relax()()
	db, hdr, err := ReadSnapshot(rc)
	if err != nil {
		return err
	}
	f.wmu.Lock()
	defer f.wmu.Unlock()
	f.dropOpen() // the snapshot replaces whatever the open transaction held
	f.mu.Lock()
	f.db = db
	f.applied.Store(hdr.Index)
	f.appliedTerm.Store(hdr.Term)
	// Entries after a restore may carry lower indexes than the file's (an
	// operator's restore of another cluster's snapshot): visible 0 makes
	// reads flush until the next batch publishes, whatever its index.
	f.visible.Store(0)
	f.batchEnd.Store(hdr.Index)
	f.mu.Unlock()
	f.tables.fireAll()
	f.wake()
	return nil
}

// decodedBatch is a run of decoded rows handed from the decoding goroutine
// to the inserting one.
type decodedBatch struct {
	table string
	rows  []any
}

// ReadSnapshot reads a snapshot into a new store and returns its header.
// Decoding runs on its own goroutine, pipelined with the inserts, which
// halves restore time on two cores.
func ReadSnapshot(r io.Reader) (*rowstore.DB, snapshot.Header, error) {
	sr, err := snapshot.NewReader(r)
	if err != nil {
		return nil, snapshot.Header{}, fmt.Errorf("restore: %w", err)
	}
	batches := make(chan decodedBatch, 16)
	decodeErr := make(chan error, 1)
	done := make(chan struct{})
	defer close(done)
	go func() {
		defer close(batches)
		decodeErr <- decodeRows(sr, batches, done)
	}()
	db := newDB()
	txn := db.Txn(true)
	defer txn.Abort()
	sharer := &launchSharer{txn: txn}
	for b := range batches {
		for _, row := range b.rows {
			if a, ok := row.(*Assignment); ok {
				sharer.share(a)
			}
			if err := txn.Insert(b.table, row); err != nil {
				return nil, snapshot.Header{}, fmt.Errorf("restore: insert %s row: %w", b.table, err)
			}
		}
	}
	if err := <-decodeErr; err != nil {
		return nil, snapshot.Header{}, err
	}
	if err := rebuildScopeUsage(txn); err != nil {
		return nil, snapshot.Header{}, err
	}
	txn.Commit()
	return db, sr.Header(), nil
}

// decodeRows decodes every record, in batches per table, until the end of
// the snapshot (whose checksum the reader verifies) or an error.
func decodeRows(sr *snapshot.Reader, out chan<- decodedBatch, done <-chan struct{}) error {
	const batchSize = 512
	dec := codec.NewDecoderBytes(nil, msgpackHandle)
	rd := &rowDec{}
	var cur decodedBatch
	flush := func() bool {
		if len(cur.rows) == 0 {
			return true
		}
		select {
		case out <- cur:
			cur = decodedBatch{table: cur.table}
			return true
		case <-done:
			return false
		}
	}
	for {
		kind, name, rec, err := sr.Next()
		if errors.Is(err, io.EOF) {
			flush()
			return nil
		}
		if err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		sec, ok := sectionByKind(kind)
		if !ok {
			return fmt.Errorf("restore: unknown section %d (%s): snapshot from a newer server?", kind, name)
		}
		if sec.table != cur.table || len(cur.rows) >= batchSize {
			if !flush() {
				return errors.New("restore: abandoned")
			}
			cur.table = sec.table
		}
		row, err := decodeRow(sec, rec, dec, rd)
		if err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		normalizeRow(row)
		if sec.keep == nil || sec.keep(row) {
			cur.rows = append(cur.rows, row)
		}
	}
}

// decodeRow decodes one record of a section; rd keeps its interned strings
// across records.
func decodeRow(sec section, rec []byte, dec *codec.Decoder, rd *rowDec) (any, error) {
	if sec.decode != nil {
		rd.b, rd.err = rec, nil
		return sec.decode(rd)
	}
	row := sec.row()
	dec.ResetBytes(rec)
	if err := dec.Decode(row); err != nil {
		return nil, fmt.Errorf("decode %s row: %w", sec.table, err)
	}
	return row, nil
}

// normalizeRow gives launches that older servers stored in the older
// {driver, command, env} shape their legacy form, as Apply does for old
// log entries, so every read shows the union's form.
func normalizeRow(row any) {
	switch r := row.(type) {
	case *Bundle:
		for i := range r.Spec.Jobs {
			NormalizeLaunch(&r.Spec.Jobs[i].Launch)
		}
	case *Assignment:
		if r.Launch == nil {
			r.Launch = &Launch{} // every stored assignment has one
		}
		NormalizeLaunch(r.Launch)
	case *NodeService:
		NormalizeLaunch(&r.Launch)
	}
}

// PersistTo writes a snapshot taken by FSM.Snapshot to w, for an operator's
// backup rather than Raft's own snapshot store.
func PersistTo(s raft.FSMSnapshot, w io.Writer) error {
	snap, ok := s.(*fsmSnapshot)
	if !ok {
		return fmt.Errorf("snapshot: not an amserver FSM snapshot (%T)", s)
	}
	return writeSnapshot(w, snap.db, snap.hdr)
}
