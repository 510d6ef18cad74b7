package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/amserver/amserver/fsm"
)

func fmtNotFound(format string, args ...any) error {
	return fmt.Errorf("%w: %s", fsm.ErrNotFound, fmt.Sprintf(format, args...))
}

func errorsJoinInvalid(err error) error { return fmt.Errorf("%w: %w", fsm.ErrInvalid, err) }

func mustJSONNoT(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// countingTransport counts what a client received: 503 answers, and the
// body bytes it read, so a test can wait for what the client has seen.
type countingTransport struct {
	unavailable atomic.Int64
	bodyBytes   atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusServiceUnavailable {
		c.unavailable.Add(1)
	}
	resp.Body = &countingBody{ReadCloser: resp.Body, n: &c.bodyBytes}
	return resp, nil
}

func (c *countingTransport) client() *http.Client { return &http.Client{Transport: c} }

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}
