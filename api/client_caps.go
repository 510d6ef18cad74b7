package api

import (
	"context"
	"net/http"
)

// Caps returns the cluster's caps and cap groups with their usage.
func (c *Client) Caps(ctx context.Context, q *QueryOptions) (*ClusterCaps, QueryMeta, error) {
	var out ClusterCaps
	meta, err := c.query(ctx, "/v1/caps", nil, q, &out)
	if err != nil {
		return nil, meta, err
	}
	return &out, meta, nil
}

// SetCaps replaces the cluster's caps and cap groups and returns them as
// stored.
func (c *Client) SetCaps(ctx context.Context, caps ClusterCaps) (*ClusterCaps, error) {
	var out ClusterCaps
	if _, err := c.write(ctx, c.newRequest(http.MethodPut, "/v1/caps", nil), caps, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
