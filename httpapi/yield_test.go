package httpapi

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestYieldWriterKeepsTheResponse: an answer written through the yielding
// wrapper arrives whole, and http.ResponseController still reaches the
// connection through it (write deadlines, flushes), as the expensive
// handlers need.
func TestYieldWriterKeepsTheResponse(t *testing.T) {
	body := strings.Repeat("x", 3*yieldEvery+7)
	var ctrlErr error
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w = yieldingWriter(yieldingWriter(w)) // wrapping twice wraps once
		if _, ok := w.(*yieldWriter).ResponseWriter.(*yieldWriter); ok {
			ctrlErr = errors.New("wrapped twice")
			return
		}
		rc := http.NewResponseController(w)
		if err := rc.SetWriteDeadline(time.Now().Add(time.Minute)); err != nil {
			ctrlErr = err
			return
		}
		for i := 0; i < len(body); i += 1000 {
			_, _ = w.Write([]byte(body[i:min(i+1000, len(body))]))
		}
		ctrlErr = rc.Flush()
	}))
	defer hs.Close()
	resp, err := http.Get(hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ctrlErr != nil {
		t.Fatalf("ResponseController through the wrapper: %v", ctrlErr)
	}
	if string(got) != body {
		t.Fatalf("got %d bytes, want %d", len(got), len(body))
	}
}
