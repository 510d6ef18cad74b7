package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// MaxTemplateArchive is the largest archive a server takes (4 MiB).
const MaxTemplateArchive = 4 << 20

// PutTemplate stores a tar or tar.gz archive as the named template's latest
// version and returns what the server found in it. The archive is read
// whole first, so a retry after noLeader resends it; pushing the bytes that
// already are the latest is a no-op answered alike.
func (c *Client) PutTemplate(ctx context.Context, name string, archive io.Reader) (*Template, error) {
	if name == "" {
		return nil, errors.New("amserver: template name is required")
	}
	body, err := io.ReadAll(io.LimitReader(archive, MaxTemplateArchive+1))
	if err != nil {
		return nil, fmt.Errorf("amserver: read template archive: %w", err)
	}
	if len(body) > MaxTemplateArchive {
		// What the server would answer, without sending 4 MiB to hear it.
		return nil, &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeBodyTooLarge,
			Message: fmt.Sprintf("the archive is larger than %d bytes", MaxTemplateArchive)}
	}
	r := c.newRequest(http.MethodPut, pathJoin("v1", "templates", name), nil)
	r.body, r.binary = body, true
	var out Template
	if _, err := c.write(ctx, r, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Templates lists every template, each as its latest version says.
func (c *Client) Templates(ctx context.Context, q *QueryOptions) ([]Template, QueryMeta, error) {
	return collect[Template](ctx, c, "/v1/templates", nil, q)
}

// Template returns a template's latest version with every version kept.
func (c *Client) Template(ctx context.Context, name string, q *QueryOptions) (*Template, QueryMeta, error) {
	var out Template
	meta, err := c.query(ctx, pathJoin("v1", "templates", name), nil, q, &out)
	if err != nil {
		return nil, meta, err
	}
	return &out, meta, nil
}

// TemplateArchive returns the bytes of a template version ("sha256:<hex>";
// "" for the latest). The caller closes the reader; checking the bytes
// against the digest is the caller's (artifact.Extract does).
func (c *Client) TemplateArchive(ctx context.Context, name, digest string) (io.ReadCloser, error) {
	var params url.Values
	if digest != "" {
		params = url.Values{"digest": {digest}}
	}
	resp, err := c.do(ctx, c.newRequest(http.MethodGet, pathJoin("v1", "templates", name, "archive"), params))
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// DeleteTemplate removes a template and every version kept under it; a
// bundle using one makes it fail with CodeInUse.
func (c *Client) DeleteTemplate(ctx context.Context, name string) error {
	_, err := c.write(ctx, c.newRequest(http.MethodDelete, pathJoin("v1", "templates", name), nil), nil, nil)
	return err
}
