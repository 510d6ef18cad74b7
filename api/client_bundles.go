package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
)

// CreateBundle submits a bundle. When spec.ID is empty the client picks one
// first, so that a retry after a lost answer is the identical create the
// server recognises (200) rather than a second bundle.
func (c *Client) CreateBundle(ctx context.Context, spec BundleSpec) (*CreateResponse, error) {
	if spec.ID == "" {
		spec.ID = NewID()
	}
	r := c.newRequest(http.MethodPost, "/v1/bundles", nil)
	r.idempotent = true // creates are idempotent by id
	r.replayable = true // and so is a repeat after a broken connection
	var out CreateResponse
	status, err := c.write(ctx, r, spec, &out)
	if err != nil {
		return nil, err
	}
	out.Created = status == http.StatusCreated
	return &out, nil
}

// ValidateBundle runs static validation without changing anything.
func (c *Client) ValidateBundle(ctx context.Context, spec BundleSpec) (*ValidateResponse, error) {
	r := c.newRequest(http.MethodPost, "/v1/bundles/validate", nil)
	r.idempotent, r.replayable = true, true
	var out ValidateResponse
	if _, err := c.write(ctx, r, spec, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PlanBundle runs placement as a dry run.
func (c *Client) PlanBundle(ctx context.Context, spec BundleSpec) (*PlanResponse, error) {
	r := c.newRequest(http.MethodPost, "/v1/bundles/plan", nil)
	r.idempotent, r.replayable = true, true
	var out PlanResponse
	if _, err := c.write(ctx, r, spec, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Bundles lists every bundle, whole, optionally narrowed by pool and
// state: it walks all pages (see ListBundles for summaries, page by page).
// The meta is the first page's.
func (c *Client) Bundles(ctx context.Context, f BundleFilter, q *QueryOptions) ([]Bundle, QueryMeta, error) {
	return collect[Bundle](ctx, c, "/v1/bundles", bundleParams(f, true), q)
}

// Bundle returns one bundle.
func (c *Client) Bundle(ctx context.Context, id string, q *QueryOptions) (*Bundle, QueryMeta, error) {
	var out Bundle
	meta, err := c.query(ctx, pathJoin("v1", "bundles", id), nil, q, &out)
	if err != nil {
		return nil, meta, err
	}
	return &out, meta, nil
}

// ReplaceBundle replaces a bundle's spec; a non-zero cas makes it
// conditional on the bundle's modifyIndex (409 casMismatch otherwise).
func (c *Client) ReplaceBundle(ctx context.Context, spec BundleSpec, cas uint64) (*CreateResponse, error) {
	if spec.ID == "" {
		return nil, errors.New("amserver: bundle id is required")
	}
	var params url.Values
	if cas > 0 {
		params = url.Values{"cas": {strconv.FormatUint(cas, 10)}}
	}
	r := c.newRequest(http.MethodPut, pathJoin("v1", "bundles", spec.ID), params)
	// Not replayed after a broken connection: with cas a repeat fails
	// casMismatch once the first applied, and a finished batch bundle
	// replaced again runs again. That failure is outcomeUnknown.
	r.replayable = false
	var out CreateResponse
	if _, err := c.write(ctx, r, spec, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteBundle starts the stop-then-delete saga and returns the bundle in
// state deleting.
func (c *Client) DeleteBundle(ctx context.Context, id string) (*Bundle, error) {
	var out Bundle
	if _, err := c.write(ctx, c.newRequest(http.MethodDelete, pathJoin("v1", "bundles", id), nil), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
