package sim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"
)

// proxy stands between the clients and one server so that a paused server
// holds requests instead of answering them, as a SIGSTOPped process would:
// the client times out and the request may still land after the resume.
type proxy struct {
	ln     *memListener
	srv    *http.Server
	rp     *httputil.ReverseProxy
	mu     sync.Mutex
	target string        // the server's HTTP address, stable across restarts
	resume chan struct{} // nil while running; closed on resume
}

func newProxy(mn *memNet, addr, target string) (*proxy, error) {
	ln, err := mn.listen(addr)
	if err != nil {
		return nil, fmt.Errorf("proxy listen: %w", err)
	}
	p := &proxy{ln: ln, target: target}
	p.rp = &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(&url.URL{Scheme: "http", Host: p.target})
		r.Out.Host = r.In.Host
	}}
	p.rp.Transport = mn.client().Transport
	p.rp.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, err error) {
		// The server is down or went away mid-request: to the client this is
		// a broken connection, whose outcome it cannot know.
		http.Error(w, err.Error(), http.StatusBadGateway)
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Addr is the address clients use instead of the server's.
func (p *proxy) Addr() string { return p.ln.Addr().String() }

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	gate := p.resume
	p.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	p.rp.ServeHTTP(w, r)
}

func (p *proxy) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resume == nil {
		p.resume = make(chan struct{})
	}
}

func (p *proxy) unpause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.resume != nil {
		close(p.resume)
		p.resume = nil
	}
}

func (p *proxy) close() {
	p.unpause()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := p.srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		_ = p.srv.Close()
	}
	_ = p.srv.Close()
}
