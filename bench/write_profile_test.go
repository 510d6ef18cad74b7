package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/trace"
	"testing"
)

// TestWriteTrace: AMBENCH_WRITE_TRACE names a directory, and a window's
// trace lands there under the system's name and concurrency, stopped by the
// window's end (a second stop changes nothing).
func TestWriteTrace(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AMBENCH_WRITE_TRACE", dir)
	stop, err := writeTrace("amserver", 16)
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatalf("second stop: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "amserver-c16.trace"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("go 1.")) {
		t.Fatalf("not an execution trace: starts %q", b[:min(len(b), 16)])
	}
}

// TestWriteTraceOff: without the variable no trace runs (one started here
// would fail while another does).
func TestWriteTraceOff(t *testing.T) {
	t.Setenv("AMBENCH_WRITE_TRACE", "")
	stop, err := writeTrace("amserver", 1)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := trace.Start(&buf); err != nil {
		t.Fatalf("a trace is running without AMBENCH_WRITE_TRACE: %v", err)
	}
	trace.Stop()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
