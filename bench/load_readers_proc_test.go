package bench

import (
	"bytes"
	"testing"
)

// TestReaderCountsCrossTheProcess: every counter the readers keep survives
// the trip from the child's counts to the parent's.
func TestReaderCountsCrossTheProcess(t *testing.T) {
	var child loadCounts
	child.pages.Add(1)
	child.tooMany.Add(2)
	child.failed.Add(3)
	child.woken.Add(4)
	child.bytes.Add(5)
	child.eventLines.Add(6)
	var parent loadCounts
	parent.pages.Add(10)
	parent.add(child.plain())
	want := readersChildOut{Pages: 11, TooMany: 2, Failed: 3, Woken: 4, Bytes: 5, EventLines: 6}
	if got := parent.plain(); got != want {
		t.Fatalf("parent counts %+v, want %+v", got, want)
	}
}

// TestReadersChildRefusesBadArguments: a child without servers or tokens
// exits 2 and answers nothing, so the parent reports the load as failed.
func TestReadersChildRefusesBadArguments(t *testing.T) {
	for _, arg := range []string{"", "{", `{"servers":[],"tokens":["t"],"clients":1}`, `{"servers":["http://x"],"tokens":[],"clients":1}`} {
		var out bytes.Buffer
		if code := readersChild(arg, &out); code != 2 || out.Len() != 0 {
			t.Errorf("readersChild(%q) = %d, %q; want 2 and no answer", arg, code, out.String())
		}
	}
}
