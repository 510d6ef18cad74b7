package api

import (
	"context"
	"io"
	"net/http"
	"net/url"
)

// TemplateArchive streams the bytes of one version of a template (GET
// /v1/templates/{name}/archive?digest=<digest>, application/octet-stream).
// Workers fetch what an assignment's resolved ref names; the caller closes
// the reader and checks the digest itself (the bytes are not trusted until
// they hash to it).
func (c *Client) TemplateArchive(ctx context.Context, name, digest string) (io.ReadCloser, error) {
	q := url.Values{}
	if digest != "" {
		q.Set("digest", digest)
	}
	resp, err := c.do(ctx, c.newRequest(http.MethodGet, pathJoin("v1", "templates", name, "archive"), q))
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
