// Package certstest writes throwaway certificates for tests: a fresh CA and
// one certificate of it, as `amserver tls` would lay them out.
package certstest

import (
	"testing"
	"time"

	"github.com/amserver/amserver/internal/certs"
)

// Write creates a CA in dir and one certificate of it for req (valid a
// day), and returns the files as the --tls-* flags name them.
func Write(t testing.TB, dir string, req certs.Request) certs.Files {
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
	certFile, keyFile, err := p.Write(dir, "cert.pem", "cert-key.pem")
	if err != nil {
		t.Fatal(err)
	}
	return certs.Files{CertFile: certFile, KeyFile: keyFile, CAFile: caCert}
}
