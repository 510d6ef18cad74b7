//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/certs"
)

// secureComposeFile turns on everything DESIGN §9 has: ACLs, TLS on the
// API with client certificates required, mutual TLS on Raft and gossip
// encryption. It reads its secrets and the certificate directory from the
// environment of docker-compose, which Security.Env provides.
const (
	secureComposeFile  = "compose.secure.yml"
	secure5ComposeFile = "compose.secure.5servers.yml"
)

// Security is one secure deployment's material: a fresh CA and
// certificates, ACL secrets and a gossip key, all made for this run.
type Security struct {
	Dir          string // holds ca.pem, server.pem, client.pem and their keys
	Management   string
	WorkerSecret string // worker-N's secret is WorkerSecret + "-N"
	GossipKey    string
	tls          *certs.TLS
}

// NewSecurity writes the material under dir (absolute, so docker can
// mount it). The server certificate carries every server's name and
// address, so the healthchecks and forwarding may use either.
func NewSecurity(dir string) (*Security, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("e2e: security dir: %w", err)
	}
	now := time.Now()
	ca, err := certs.NewCA(1, now)
	if err != nil {
		return nil, err
	}
	caCert, caKey, err := ca.Write(dir, certs.CAFile, certs.CAKeyFile)
	if err != nil {
		return nil, err
	}
	auth, err := certs.LoadAuthority(caCert, caKey)
	if err != nil {
		return nil, err
	}
	var names []string
	for i := 1; i <= 5; i++ {
		names = append(names, fmt.Sprintf("server-%d", i), fmt.Sprintf("172.28.0.1%d", i))
	}
	for _, req := range []struct {
		name string
		req  certs.Request
	}{
		{"server", certs.Request{Server: true, Names: names, Days: 1}},
		{"client", certs.Request{Days: 1}},
	} {
		p, err := auth.Issue(req.req, now)
		if err != nil {
			return nil, err
		}
		if _, _, err := p.Write(dir, req.name+".pem", req.name+"-key.pem"); err != nil {
			return nil, err
		}
	}
	s := &Security{Dir: dir, Management: randomSecret(), WorkerSecret: randomSecret(), GossipKey: randomKey()}
	s.tls, err = certs.Load(certs.Files{CertFile: filepath.Join(dir, "client.pem"), KeyFile: filepath.Join(dir, "client-key.pem"),
		CAFile: caCert})
	return s, err
}

// Env is what docker-compose needs to fill in compose.secure.yml.
func (s *Security) Env() []string {
	return []string{
		"AMSERVER_E2E_SECURE_DIR=" + s.Dir,
		"AMSERVER_E2E_MANAGEMENT=" + s.Management,
		"AMSERVER_E2E_WORKER_SECRET=" + s.WorkerSecret,
		"AMSERVER_E2E_GOSSIP_KEY=" + s.GossipKey,
	}
}

// ClientOptions make the harness's clients speak HTTPS with a client
// certificate and send the management token.
func (s *Security) ClientOptions() []api.Option {
	return []api.Option{api.WithToken(s.Management), api.WithTLSConfig(s.tls.ServerClient())}
}

func randomSecret() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

func randomKey() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}
