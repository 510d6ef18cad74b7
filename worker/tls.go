package worker

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/certs"
)

// httpsClient is the worker's HTTPS client; nil without a CA. Servers are
// verified by the server name their certificates carry, not by the address
// they were reached at. One client serves every call, so connections (and
// their handshakes) are reused.
func httpsClient(f certs.Files) (*http.Client, *certs.TLS, error) {
	if f.CAFile == "" {
		if f.Enabled() {
			return nil, nil, fmt.Errorf("worker: a TLS certificate needs the CA too (--tls-ca)")
		}
		return nil, nil, nil
	}
	tc, err := certs.Load(f)
	if err != nil {
		return nil, nil, fmt.Errorf("worker: %w", err)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = tc.ServerClient()
	return &http.Client{Transport: t}, tc, nil
}

// ReloadTLS reads the worker's certificate, key and CA again (SIGHUP); the
// next handshake uses them. Without TLS there is nothing to do.
func (w *Worker) ReloadTLS() error {
	if w.tls == nil {
		return nil
	}
	if err := w.tls.Reload(); err != nil {
		return fmt.Errorf("worker: reload TLS: %w", err)
	}
	return nil
}

// newClient is an API client for one server address. With TLS a bare
// host:port means https (a --servers flag); gossip already says https.
func (w *Worker) newClient(addr string) (*api.Client, error) {
	return w.clientAs(addr, w.cfg.Token)
}

// clientAs is newClient with another token (a logs caller's, to check).
func (w *Worker) clientAs(addr, token string) (*api.Client, error) {
	opts := []api.Option{api.WithToken(token)}
	switch {
	case w.cfg.HTTPClient != nil:
		opts = append(opts, api.WithHTTPClient(w.cfg.HTTPClient))
	case w.https != nil:
		if !strings.Contains(addr, "://") {
			addr = "https://" + addr
		}
		opts = append(opts, api.WithHTTPClient(w.https))
	}
	return api.New(addr, opts...)
}
