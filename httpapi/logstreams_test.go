package httpapi

import (
	"errors"
	"net/http"
	"testing"
)

// TestLogStreamsBound: a caller gets at most maxLogStreamsPerCaller streams
// and the server maxLogStreams, each refusal a 429; a closed stream (closed
// twice, too) gives its place back.
func TestLogStreamsBound(t *testing.T) {
	var l logStreams
	refused := func(caller string) {
		t.Helper()
		var he *httpError
		if _, err := l.open(caller); !errors.As(err, &he) || he.status != http.StatusTooManyRequests {
			t.Fatalf("open for %s: %v, want a 429", caller, err)
		}
	}
	var closes []func()
	for range maxLogStreamsPerCaller {
		done, err := l.open("token a")
		if err != nil {
			t.Fatal(err)
		}
		closes = append(closes, done)
	}
	refused("token a")
	closes[0]()
	closes[0]() // idempotent: frees one place, not two
	if _, err := l.open("token a"); err != nil {
		t.Fatalf("a freed place was not given back: %v", err)
	}
	refused("token a")
	for i := 0; l.total < maxLogStreams; i++ {
		if _, err := l.open("client " + string(rune('A'+i%26)) + string(rune('a'+i/26))); err != nil {
			t.Fatal(err)
		}
	}
	refused("token b")
}
