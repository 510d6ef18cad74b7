package api

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"

	"github.com/amserver/amserver/internal/dropconn"
)

// TestBrokenKeptAliveConnection: a write whose repeat changes nothing is
// sent again on a fresh connection when the reused one breaks before any
// answer; one whose repeat is not a no-op fails as outcomeUnknown, with no
// answer (Status 0), and is sent once.
func TestBrokenKeptAliveConnection(t *testing.T) {
	for _, tc := range []struct {
		name  string
		key   string
		call  func(context.Context, *Client) error
		sends int
	}{
		{"put pool", "PUT /v1/pools/p", func(ctx context.Context, c *Client) error {
			_, err := c.PutPool(ctx, Pool{Name: "p"})
			return err
		}, 2},
		{"create bundle", "POST /v1/bundles", func(ctx context.Context, c *Client) error {
			_, err := c.CreateBundle(ctx, BundleSpec{ID: "b"})
			return err
		}, 2},
		{"delete bundle", "DELETE /v1/bundles/b", func(ctx context.Context, c *Client) error {
			_, err := c.DeleteBundle(ctx, "b")
			return err
		}, 2},
		{"replace bundle", "PUT /v1/bundles/b", func(ctx context.Context, c *Client) error {
			_, err := c.ReplaceBundle(ctx, BundleSpec{ID: "b"}, 7)
			return err
		}, 1},
		{"new ACL token", "POST /v1/acl/tokens", func(ctx context.Context, c *Client) error {
			_, err := c.CreateACLToken(ctx, ACLTokenRequest{})
			return err
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := dropconn.New()
			hs := httptest.NewServer(d)
			defer hs.Close()
			// One connection per host: the second call must reuse the first's.
			hc := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
			c, err := New(hs.URL, WithHTTPClient(hc), WithMaxRetries(0))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.PutPool(t.Context(), Pool{Name: "first"}); err != nil {
				t.Fatalf("first request: %v", err)
			}
			err = tc.call(t.Context(), c)
			var ae *Error
			switch {
			case tc.sends == 2 && err != nil:
				t.Fatalf("replayable write failed: %v", err)
			case tc.sends == 1 && (!errors.As(err, &ae) || ae.Code != CodeOutcomeUnknown || ae.Status != 0):
				t.Fatalf("unreplayable write = %v, want outcomeUnknown without an answer", err)
			}
			if got := d.Seen(tc.key); got != tc.sends {
				t.Fatalf("%s received %d times, want %d", tc.key, got, tc.sends)
			}
		})
	}
}

// TestUnsentWriteIsNotUnknown: a write that never left (the dial was
// refused) fails as such, not as outcomeUnknown.
func TestUnsentWriteIsNotUnknown(t *testing.T) {
	hs := httptest.NewServer(http.NotFoundHandler())
	addr := hs.URL
	hs.Close()
	c, err := New(addr, WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ReplaceBundle(t.Context(), BundleSpec{ID: "b"}, 0)
	if err == nil || IsCode(err, CodeOutcomeUnknown) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("refused write = %v, want the refused dial", err)
	}
}
