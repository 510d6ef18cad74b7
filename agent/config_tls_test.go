package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/internal/certs"
)

// writeCert writes a CA and one certificate of it into dir.
func writeCert(t *testing.T, dir string, req certs.Request) certs.Files {
	t.Helper()
	ca, err := certs.NewCA(1, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	caCert, caKey, err := ca.Write(dir, certs.CAFile, certs.CAKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := certs.LoadAuthority(caCert, caKey)
	if err != nil {
		t.Fatal(err)
	}
	req.Days = 1
	p, err := auth.Issue(req, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, err := p.Write(dir, "c.pem", "c-key.pem")
	if err != nil {
		t.Fatal(err)
	}
	return certs.Files{CertFile: certFile, KeyFile: keyFile, CAFile: caCert}
}

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
		c := Config{TLS: writeCert(t, t.TempDir(), tc.req)}
		_, err := c.loadTLS()
		if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), "tls cert create --server")) {
			t.Errorf("%s: %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
