package agent

import (
	"strings"
	"testing"

	"github.com/amserver/amserver/internal/certs"
	"github.com/amserver/amserver/internal/certs/certstest"
)

// A server given a client certificate ran, and every peer refused it on
// Raft: on a real cluster it sat outside the configuration with only the
// leader's log saying why. It is refused at start instead.
func TestServerTLSNeedsServerCertificate(t *testing.T) {
	cases := []struct {
		name string
		req  certs.Request
		ok   bool
	}{
		{"server certificate", certs.Request{Server: true}, true},
		{"client certificate", certs.Request{}, false},
	}
	for _, tc := range cases {
		c := Config{TLS: certstest.Write(t, t.TempDir(), tc.req)}
		_, err := c.loadTLS()
		if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), "tls cert create --server")) {
			t.Errorf("%s: %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
