package httpapi

import (
	"bytes"
	"testing"
	"time"

	"github.com/amserver/amserver/internal/poll"
)

// bigAnswer is an answer over sharedKeepMax in a pooled buffer, as a page
// of a thousand whole bundles is.
func bigAnswer() (answer, error) {
	buf := pageBufs.Get().(*bytes.Buffer)
	buf.Reset()
	buf.Write(make([]byte, sharedKeepMax+1))
	return answer{body: buf.Bytes(), buf: buf}, nil
}

// TestSharedBigAnswerNotKept: a big answer nobody else asked for is shared
// while it is sent, then dropped and its buffer given back, not held for
// the TTL.
func TestSharedBigAnswerNotKept(t *testing.T) {
	s := newSharedAnswers()
	computed := 0
	compute := func() (answer, error) { computed++; return bigAnswer() }
	_, doneA, err := s.get(t.Context(), "page", 1, compute)
	if err != nil {
		t.Fatal(err)
	}
	e := s.entries["page"]
	if e == nil || e.kept || s.bytes != 0 {
		t.Fatalf("a big answer was kept (%d bytes) or unmapped while sent", s.bytes)
	}
	ansB, doneB, err := s.get(t.Context(), "page", 1, compute)
	if err != nil || computed != 1 || len(ansB.body) != sharedKeepMax+1 {
		t.Fatalf("a request while the answer is sent: %d computations, %d bytes, %v", computed, len(ansB.body), err)
	}
	doneA()
	if e.ans.buf == nil {
		t.Fatal("the buffer went back while a request still sends it")
	}
	doneB()
	if _, ok := s.entries["page"]; ok || e.refs != 0 || e.ans.buf != nil {
		t.Fatalf("after the last send: mapped %v, %d refs, buffer held %v", ok, e.refs, e.ans.buf != nil)
	}
	_, done, _ := s.get(t.Context(), "page", 1, compute)
	done()
	if computed != 2 {
		t.Fatalf("%d computations, want 2: the dropped answer was reused", computed)
	}
}

// TestSharedBigAnswerJoinedKept: a big answer a second request asked for
// while it was built is kept for the TTL, as woken watchers' pages are.
func TestSharedBigAnswerJoinedKept(t *testing.T) {
	s := newSharedAnswers()
	gate, started := make(chan struct{}), make(chan struct{})
	joined := make(chan func())
	go func() {
		_, done, err := s.get(t.Context(), "page", 1, func() (answer, error) { close(started); <-gate; return bigAnswer() })
		if err != nil {
			t.Error(err)
		}
		joined <- done
	}()
	<-started
	go func() {
		_, done, err := s.get(t.Context(), "page", 1, func() (answer, error) { t.Error("computed twice"); return bigAnswer() })
		if err != nil {
			t.Error(err)
		}
		joined <- done
	}()
	poll.Eventually(t, 10*time.Second, "the second request joins", func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		return poll.Check(s.entries["page"].refs == 2, "%d requests", s.entries["page"].refs)
	})
	close(gate)
	(<-joined)()
	(<-joined)()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries["page"]
	if e == nil || !e.kept || e.refs != 1 || s.bytes != sharedKeepMax+1 || e.ans.buf == nil {
		t.Fatalf("a joined big answer is not kept: %+v, %d bytes", e, s.bytes)
	}
	e.at = time.Now().Add(-2 * sharedTTL)
	s.expire(time.Now())
	if e.refs != 0 || e.ans.buf != nil || len(s.entries) != 0 {
		t.Fatalf("an expired answer holds its buffer: %d refs, %d entries", e.refs, len(s.entries))
	}
}
