package httpapi

import (
	"net/http"
	"runtime"
)

// yieldEvery is how many bytes of an expensive answer are written between
// two yields of the processor.
const yieldEvery = 32 << 10

// yieldWriter hands the processor over to other goroutines after every
// yieldEvery bytes an expensive answer writes. Go preempts a running
// goroutine only after about 10 ms, and a write hops through several
// goroutines (handler, Raft, fsync, FSM, handler again), each readied
// behind whatever encodes a list or an event page on that processor: with
// 2,000 read clients on two cores that wait, hop after hop, was most of a
// write's p99 (docs/performance.md, "Load held"). Yielding puts the
// encoder at the back of the run queue, so a readied write goes first.
type yieldWriter struct {
	http.ResponseWriter
	written int
}

// yieldingWriter wraps w, once.
func yieldingWriter(w http.ResponseWriter) http.ResponseWriter {
	if _, ok := w.(*yieldWriter); ok {
		return w
	}
	return &yieldWriter{ResponseWriter: w}
}

func (w *yieldWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	if w.written += n; w.written >= yieldEvery {
		w.written = 0
		runtime.Gosched()
	}
	return n, err
}

// Flush and Unwrap keep http.ResponseController working through the
// wrapper (flushes, write deadlines).
func (w *yieldWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w *yieldWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
