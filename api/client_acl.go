package api

import (
	"context"
	"net/http"
)

// CreateACLToken creates a token; the answer holds its secret, shown once.
func (c *Client) CreateACLToken(ctx context.Context, in ACLTokenRequest) (*ACLTokenCreated, error) {
	var out ACLTokenCreated
	if _, err := c.write(ctx, c.newRequest(http.MethodPost, "/v1/acl/tokens", nil), in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ACLTokens lists every token (management only), walking all pages.
func (c *Client) ACLTokens(ctx context.Context, q *QueryOptions) ([]ACLToken, QueryMeta, error) {
	return collect[ACLToken](ctx, c, "/v1/acl/tokens", nil, q)
}

// ACLToken reads one token by accessor id.
func (c *Client) ACLToken(ctx context.Context, accessorID string, q *QueryOptions) (*ACLToken, QueryMeta, error) {
	var out ACLToken
	meta, err := c.query(ctx, pathJoin("v1", "acl", "tokens", accessorID), nil, q, &out)
	if err != nil {
		return nil, meta, err
	}
	return &out, meta, nil
}

// ACLTokenSelf describes the token the client sends.
func (c *Client) ACLTokenSelf(ctx context.Context) (*ACLToken, error) {
	var out ACLToken
	if _, err := c.query(ctx, "/v1/acl/token/self", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteACLToken deletes a token by accessor id.
func (c *Client) DeleteACLToken(ctx context.Context, accessorID string) error {
	_, err := c.write(ctx, c.newRequest(http.MethodDelete, pathJoin("v1", "acl", "tokens", accessorID), nil), nil, nil)
	return err
}
