package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// answer is an encoded read: the JSON body and, for a list, the token of
// the next page. buf, when set, is the pooled buffer body lies in (a list
// page's, page_encode.go), to go back to the pool once nothing sends it.
type answer struct {
	body []byte
	next string
	buf  *bytes.Buffer
}

// pageResult is what a list's readFunc returns: the page's encoded body
// and the next page's token ("" on the last), in a pooled buffer.
type pageResult struct {
	body []byte
	next string
	buf  *bytes.Buffer
}

func encodeAnswer(v any) (answer, error) {
	if p, ok := v.(pageResult); ok {
		return answer(p), nil
	}
	body, err := json.Marshal(v)
	if err != nil {
		return answer{}, fmt.Errorf("encode answer: %w", err)
	}
	return answer{body: append(body, '\n')}, nil
}

// Shared answers: requests for the same thing at the same state index get
// one encoding. A write wakes every blocking query waiting on its tables at
// once; without sharing, 100 idle list watchers woken by one write built
// and sent 776 MB. An answer is shared with every request that asks for it
// while it is built or sent. After that it is kept briefly (answers that
// read the gossip view, such as a node's lastSeen, must not freeze), and
// only while the sum of the kept bodies stays bounded; a body over
// sharedKeepMax is kept only if a second request asked for it, so a walk
// of big pages does not hold each one for the TTL: its pooled buffer goes
// back at once, for the next page. Each read drops the answers whose time
// is up, oldest first, so a walk of a list does not leave its pages held
// (an idle server holds the last second's until its next read).
const (
	sharedTTL      = time.Second
	sharedMaxBytes = 64 << 20
	sharedKeepMax  = 256 << 10
)

type sharedAnswers struct {
	mu      sync.Mutex
	entries map[string]*sharedEntry
	bytes   int
	// kept[head:] are the entries whose bodies count in bytes, in the
	// order they were kept, which is the order they expire in.
	kept []keptAnswer
	head int
}

type keptAnswer struct {
	key string
	e   *sharedEntry
}

type sharedEntry struct {
	key   string
	index uint64
	ready chan struct{} // closed when ans and ok are set
	ans   answer
	ok    bool
	at    time.Time
	kept  bool // its body counts in bytes (under mu)
	// refs are the requests building, waiting for or sending the answer,
	// plus one while it is kept; at 0 its buffer is pooled (under mu).
	refs   int
	joined bool // a second request asked for it (under mu)
}

func newSharedAnswers() *sharedAnswers { return &sharedAnswers{entries: map[string]*sharedEntry{}} }

// get returns the answer for key at index: one being computed, sent, or
// computed within the TTL, else compute's. Only successes are shared: a
// waiter whose leader failed (its client left, it was turned away)
// computes its own. The caller calls done once it has sent the answer.
func (s *sharedAnswers) get(ctx context.Context, key string, index uint64, compute func() (answer, error)) (ans answer, done func(), err error) {
	s.mu.Lock()
	s.expire(time.Now())
	e := s.entries[key]
	if e != nil && e.index == index && (e.at.IsZero() || time.Since(e.at) < sharedTTL) {
		e.refs++
		e.joined = true
		s.mu.Unlock()
		return s.await(ctx, e, compute)
	}
	e = &sharedEntry{key: key, index: index, ready: make(chan struct{}), refs: 1}
	if old := s.entries[key]; old != nil && old.kept {
		s.unkeep(old)
	}
	s.entries[key] = e
	s.mu.Unlock()

	ans, err = compute()
	s.mu.Lock()
	e.ans, e.ok, e.at = ans, err == nil, time.Now()
	if s.entries[key] == e {
		switch {
		case err != nil:
			delete(s.entries, key)
		case (len(ans.body) <= sharedKeepMax || e.joined) && s.bytes+len(ans.body) <= sharedMaxBytes:
			s.keep(key, e)
		} // else it is shared only until its last request has sent it
	}
	close(e.ready)
	s.mu.Unlock()
	if err != nil {
		s.done(e)
		return answer{}, func() {}, err
	}
	return ans, func() { s.done(e) }, nil
}

// await waits for e, which the caller holds a reference to.
func (s *sharedAnswers) await(ctx context.Context, e *sharedEntry, compute func() (answer, error)) (answer, func(), error) {
	select {
	case <-e.ready:
		if e.ok {
			return e.ans, func() { s.done(e) }, nil
		}
	case <-ctx.Done():
		s.done(e)
		return answer{}, func() {}, ctx.Err()
	}
	s.done(e)
	ans, err := compute()
	return ans, func() { putPageBuf(ans.buf) }, err
}

// done drops a request's reference to e.
func (s *sharedAnswers) done(e *sharedEntry) {
	s.mu.Lock()
	s.release(e)
	s.mu.Unlock()
}

// release drops a reference to e; the last one unmaps it and pools its
// buffer (the caller holds mu).
func (s *sharedAnswers) release(e *sharedEntry) {
	if e.refs--; e.refs > 0 {
		return
	}
	if s.entries[e.key] == e {
		delete(s.entries, e.key)
	}
	putPageBuf(e.ans.buf)
	e.ans = answer{}
}

// keep counts e's body, to expire in turn (the caller holds mu).
func (s *sharedAnswers) keep(key string, e *sharedEntry) {
	e.kept = true
	e.refs++
	s.bytes += len(e.ans.body)
	s.kept = append(s.kept, keptAnswer{key, e})
}

// unkeep stops counting e's body (the caller holds mu).
func (s *sharedAnswers) unkeep(e *sharedEntry) {
	s.bytes -= len(e.ans.body)
	e.kept = false
	s.release(e)
}

// expire drops the answers kept for the TTL (the caller holds mu).
func (s *sharedAnswers) expire(now time.Time) {
	for ; s.head < len(s.kept) && now.Sub(s.kept[s.head].e.at) >= sharedTTL; s.head++ {
		if k := s.kept[s.head]; k.e.kept {
			if s.entries[k.key] == k.e {
				delete(s.entries, k.key)
			}
			s.unkeep(k.e)
		}
		s.kept[s.head] = keptAnswer{}
	}
	if s.head > len(s.kept)/2 { // move the rest down, at most as many as were dropped
		n := copy(s.kept, s.kept[s.head:])
		clear(s.kept[n:])
		s.kept, s.head = s.kept[:n], 0
	}
}

// shareKey names what a read answers: its path and every query parameter
// except those that say how to read (consistency, blocking), which do not
// change the answer at a given index.
func shareKey(c echo.Context) string {
	req := c.Request()
	q := c.QueryParams()
	keys := make([]string, 0, len(q))
	for k := range q {
		switch k {
		case "index", "wait", "stale", "consistent":
		default:
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString(req.Method + " " + req.URL.Path + "?")
	for _, k := range keys {
		for _, v := range q[k] {
			b.WriteString(url.QueryEscape(k) + "=" + url.QueryEscape(v) + "&")
		}
	}
	return b.String()
}
