package api

import (
	"context"
	"iter"
	"net/url"
	"strconv"
)

// Lists page (DESIGN §7). The iterators below walk every page of a list,
// asking for the next while the caller consumes the current one, and stop
// at the first error, which they yield. Each page is served at its own
// index: a walk is not a snapshot, but it sees every object that existed
// for the whole walk exactly once. Blocking options (q.Index) apply to the
// first page only.

// listPage reads one page of path into a slice of T.
func listPage[T any](ctx context.Context, c *Client, path string, params url.Values, o ListOptions, q *QueryOptions) ([]T, PageMeta, error) {
	if params == nil {
		params = url.Values{}
	}
	if o.Prefix != "" {
		params.Set("prefix", o.Prefix)
	}
	if o.Filter != "" {
		params.Set("filter", o.Filter)
	}
	if o.PerPage > 0 {
		params.Set("per_page", strconv.Itoa(o.PerPage))
	}
	if o.NextToken != "" {
		params.Set("next_token", o.NextToken)
	}
	var out []T
	resp, err := c.do(ctx, c.newRequest("GET", path, q.values(params)))
	if err != nil {
		return nil, PageMeta{}, err
	}
	defer closeBody(resp)
	meta := PageMeta{QueryMeta: c.readMeta(resp.Header), NextToken: resp.Header.Get(HeaderNextToken)}
	if err := decodeBody(resp, &out); err != nil {
		return nil, meta, err
	}
	return out, meta, nil
}

// walk yields every entry of every page from o.NextToken on.
func walk[T any](ctx context.Context, c *Client, path string, params url.Values, o ListOptions, q *QueryOptions) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for {
			page, meta, err := listPage[T](ctx, c, path, cloneValues(params), o, q)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, v := range page {
				if !yield(v, nil) {
					return
				}
			}
			if meta.NextToken == "" {
				return
			}
			o.NextToken = meta.NextToken
			q = q.nonBlocking()
		}
	}
}

// collect walks a whole list into a slice, with the first page's meta.
func collect[T any](ctx context.Context, c *Client, path string, params url.Values, q *QueryOptions) ([]T, QueryMeta, error) {
	var first QueryMeta
	all := []T{} // an empty list decodes as one, not as nil
	o := ListOptions{PerPage: MaxPerPage}
	for {
		page, meta, err := listPage[T](ctx, c, path, cloneValues(params), o, q)
		if err != nil {
			return nil, first, err
		}
		if o.NextToken == "" {
			first = meta.QueryMeta
		}
		all = append(all, page...)
		if meta.NextToken == "" {
			return all, first, nil
		}
		o.NextToken = meta.NextToken
		q = q.nonBlocking()
	}
}

// nonBlocking is q without its blocking options: the pages after the first
// of a walk must not wait for a change.
func (q *QueryOptions) nonBlocking() *QueryOptions {
	if q == nil {
		return nil
	}
	out := *q
	out.Index, out.Wait = 0, 0
	return &out
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

func bundleParams(f BundleFilter, full bool) url.Values {
	params := url.Values{}
	if f.Pool != "" {
		params.Set("pool", f.Pool)
	}
	if f.State != "" {
		params.Set("state", f.State)
	}
	if full {
		params.Set("full", "true")
	}
	return params
}

func nodeParams(f NodeFilter, full bool) url.Values {
	params := url.Values{}
	if f.Pool != "" {
		params.Set("pool", f.Pool)
	}
	if f.Status != "" {
		params.Set("status", f.Status)
	}
	if full {
		params.Set("full", "true")
	}
	return params
}

// BundlesPage reads one page of bundle summaries.
func (c *Client) BundlesPage(ctx context.Context, f BundleFilter, o ListOptions, q *QueryOptions) ([]BundleSummary, PageMeta, error) {
	return listPage[BundleSummary](ctx, c, "/v1/bundles", bundleParams(f, false), o, q)
}

// ListBundles walks the bundle summaries from o.NextToken on.
func (c *Client) ListBundles(ctx context.Context, f BundleFilter, o ListOptions, q *QueryOptions) iter.Seq2[BundleSummary, error] {
	return walk[BundleSummary](ctx, c, "/v1/bundles", bundleParams(f, false), o, q)
}

// ListBundlesFull walks the whole bundles (?full=true).
func (c *Client) ListBundlesFull(ctx context.Context, f BundleFilter, o ListOptions, q *QueryOptions) iter.Seq2[Bundle, error] {
	return walk[Bundle](ctx, c, "/v1/bundles", bundleParams(f, true), o, q)
}

// NodesPage reads one page of node summaries.
func (c *Client) NodesPage(ctx context.Context, f NodeFilter, o ListOptions, q *QueryOptions) ([]NodeSummary, PageMeta, error) {
	return listPage[NodeSummary](ctx, c, "/v1/nodes", nodeParams(f, false), o, q)
}

// ListNodes walks the node summaries from o.NextToken on.
func (c *Client) ListNodes(ctx context.Context, f NodeFilter, o ListOptions, q *QueryOptions) iter.Seq2[NodeSummary, error] {
	return walk[NodeSummary](ctx, c, "/v1/nodes", nodeParams(f, false), o, q)
}

// ListNodesFull walks the whole nodes (?full=true).
func (c *Client) ListNodesFull(ctx context.Context, f NodeFilter, o ListOptions, q *QueryOptions) iter.Seq2[Node, error] {
	return walk[Node](ctx, c, "/v1/nodes", nodeParams(f, true), o, q)
}

// ListPools walks the pools (list entries are whole pools).
func (c *Client) ListPools(ctx context.Context, o ListOptions, q *QueryOptions) iter.Seq2[Pool, error] {
	return walk[Pool](ctx, c, "/v1/pools", nil, o, q)
}

// ListServices walks the node services.
func (c *Client) ListServices(ctx context.Context, o ListOptions, q *QueryOptions) iter.Seq2[NodeService, error] {
	return walk[NodeService](ctx, c, "/v1/services", nil, o, q)
}

// ListTemplates walks the templates, each as its latest version says.
func (c *Client) ListTemplates(ctx context.Context, o ListOptions, q *QueryOptions) iter.Seq2[Template, error] {
	return walk[Template](ctx, c, "/v1/templates", nil, o, q)
}

// ListACLTokens walks the ACL tokens (management token).
func (c *Client) ListACLTokens(ctx context.Context, o ListOptions, q *QueryOptions) iter.Seq2[ACLToken, error] {
	return walk[ACLToken](ctx, c, "/v1/acl/tokens", nil, o, q)
}
