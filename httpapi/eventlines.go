package httpapi

import (
	"encoding/json"
	"fmt"
	"sync"

	"github.com/amserver/amserver/fsm"
)

// eventLines keeps each event's NDJSON line, so that the streams replaying
// or following the log encode every event once between them. Encoding each
// page for each stream was a quarter of the leader's CPU with 600 streams
// replaying from index 0, and the pages held in memory were a fifth of its
// heap. Events never change once written, but a snapshot restore can bring
// back other events at the same position: a line is reused only for an
// event equal to the one it was made from.
type eventLines struct {
	mu   sync.Mutex
	kept map[eventKey]eventLine
	max  int // entries; past it the lines of events the state no longer holds go
}

type eventKey struct {
	index uint64
	seq   int
}

type eventLine struct {
	ev   fsm.Event
	line []byte
}

// defaultEventLines is a little more than the events the state keeps
// (the last 10,000), so lines of pruned events are dropped in batches.
const defaultEventLines = 16_384

func newEventLines(max int) *eventLines {
	return &eventLines{kept: map[eventKey]eventLine{}, max: max}
}

// lines returns the lines of events (read from st), encoding those not
// kept yet.
func (l *eventLines) lines(st *fsm.State, events []fsm.Event) ([][]byte, error) {
	out := make([][]byte, 0, len(events))
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range events {
		k := eventKey{index: e.Index, seq: e.Seq}
		if kept, ok := l.kept[k]; ok && kept.ev == e {
			out = append(out, kept.line)
			continue
		}
		line, err := json.Marshal(eventToAPI(e))
		if err != nil {
			return nil, fmt.Errorf("encode event %d: %w", e.Index, err)
		}
		line = append(line, '\n')
		l.kept[k] = eventLine{ev: e, line: line}
		out = append(out, line)
	}
	if len(l.kept) > l.max {
		l.prune(st)
	}
	return out, nil
}

// prune drops the lines of events older than st's oldest, or all of them
// when that is not enough (the caller holds mu).
func (l *eventLines) prune(st *fsm.State) {
	oldest := st.EventsPage(0, 1)
	for k := range l.kept {
		if len(oldest) == 0 || k.index < oldest[0].Index {
			delete(l.kept, k)
		}
	}
	if len(l.kept) > l.max {
		clear(l.kept)
	}
}
