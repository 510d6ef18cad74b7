package worker

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/amserver/amserver/internal/certs"
	"github.com/amserver/amserver/internal/certs/certstest"
	"github.com/amserver/amserver/internal/logrec"
)

// issue writes a CA and one certificate of it into dir and loads them as a
// worker would (--tls-cert, --tls-key, --tls-ca).
func issue(t *testing.T, dir string, req certs.Request) *certs.TLS {
	t.Helper()
	tc, err := certs.Load(certstest.Write(t, dir, req))
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// A worker given a client certificate (what docs/operations.md §11.1 hands
// workers) serves its logs over HTTPS with it, and every server refuses the
// connection: on a real cluster 'amserver logs' answered 502 and the worker
// had said nothing at start. It now warns once, at start.
func TestLogListenerWarnsOnClientCertificate(t *testing.T) {
	cases := []struct {
		name string
		req  certs.Request
		warn bool
	}{
		{"client certificate", certs.Request{}, true},
		{"server certificate", certs.Request{Server: true}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &logrec.Recorder{}
			w := &Worker{cfg: Config{HTTPAddr: "127.0.0.1:0"}, logger: slog.New(rec), tls: issue(t, t.TempDir(), tc.req)}
			url, err := w.listenLogs()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = w.httpLn.Close() })
			if !strings.HasPrefix(url, "https://") {
				t.Fatalf("url %q, want https", url)
			}
			warned := rec.Saw("servers will refuse this worker's log endpoint")
			if warned != tc.warn {
				t.Fatalf("warned %v, want %v (%q)", warned, tc.warn, rec.At(slog.LevelWarn))
			}
		})
	}
}
