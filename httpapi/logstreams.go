package httpapi

import "sync"

// Log streams (GET /v1/assignments/{id}/logs) can last as long as a job
// runs, so they do not take the expensive-request slots, which would stall
// a caller's lists behind its own follow. They have a bound of their own:
// each holds a goroutine and a connection to a worker, and a read token
// must not be able to open them without limit (issue 21).
const (
	maxLogStreams          = 256
	maxLogStreamsPerCaller = 16
)

// logStreams counts the open log streams, in all and per caller.
type logStreams struct {
	mu       sync.Mutex
	total    int
	byCaller map[string]int
}

// open takes a stream for caller, or says why it may not.
func (l *logStreams) open(caller string) (func(), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.total >= maxLogStreams:
		return nil, tooMany("this server already streams %d logs; retry later", maxLogStreams)
	case l.byCaller[caller] >= maxLogStreamsPerCaller:
		return nil, tooMany("%d log streams open for this caller; close one first", maxLogStreamsPerCaller)
	}
	if l.byCaller == nil {
		l.byCaller = map[string]int{}
	}
	l.total++
	l.byCaller[caller]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.total--
			if l.byCaller[caller]--; l.byCaller[caller] == 0 {
				delete(l.byCaller, caller)
			}
		})
	}, nil
}
