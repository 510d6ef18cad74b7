package elastic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// httpProvisioner is the webhook provisioner (docs/provisioner.md): a
// create is POST {url} with the request, a delete is DELETE {url}/{nodeId}
// with the same body. 2xx is success; 409 on a create (that request id
// already made its node) and 404 on a delete (already gone) are too. A
// redirect is a refusal, never followed, and an answer's body is never
// quoted: errors (which the leader logs) carry the status line only.
type httpProvisioner struct {
	url    string
	client *http.Client
}

var _ Provisioner = (*httpProvisioner)(nil)

func (p *httpProvisioner) Create(ctx context.Context, req *ProvisionRequest) error {
	return p.call(ctx, http.MethodPost, p.url, req, http.StatusConflict)
}

func (p *httpProvisioner) Delete(ctx context.Context, req *ProvisionRequest) error {
	target, err := nodeURL(p.url, req.NodeID)
	if err != nil {
		return err
	}
	return p.call(ctx, http.MethodDelete, target, req, http.StatusNotFound)
}

// nodeURL is {url}/{nodeId} with the node id appended to the URL's path, so
// a query in the configured URL (?region=eu) stays a query instead of
// swallowing the node id.
func nodeURL(base, nodeID string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("provisioner URL: %w", err)
	}
	return u.JoinPath(nodeID).String(), nil
}

// httpDrain bounds how much of an answer is read (and thrown away) so the
// connection can be reused.
const httpDrain = 64 << 10

func (p *httpProvisioner) call(ctx context.Context, method, target string, req *ProvisionRequest, alsoOK int) error {
	raw, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode provision request: %w", err)
	}
	hr, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("provisioner %s %s: %w", method, target, err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Idempotency-Key", req.RequestID)
	resp, err := p.client.Do(hr)
	if err != nil {
		return fmt.Errorf("provisioner %s %s: %w", method, target, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, httpDrain))
	switch {
	case resp.StatusCode/100 == 2, resp.StatusCode == alsoOK:
		return nil
	case resp.StatusCode/100 == 3:
		return fmt.Errorf("provisioner %s %s: %w: %s (redirects are not followed)", method, target, errPermanent, resp.Status)
	case resp.StatusCode/100 == 4 && resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusRequestTimeout:
		return fmt.Errorf("provisioner %s %s: %w: %s", method, target, errPermanent, resp.Status)
	}
	return fmt.Errorf("provisioner %s %s: %s", method, target, resp.Status)
}
