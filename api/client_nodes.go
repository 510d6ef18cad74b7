package api

import (
	"context"
	"errors"
	"net/http"
	"net/url"
)

// Pools lists every pool, walking all pages.
func (c *Client) Pools(ctx context.Context, q *QueryOptions) ([]Pool, QueryMeta, error) {
	return collect[Pool](ctx, c, "/v1/pools", nil, q)
}

// Pool returns one pool.
func (c *Client) Pool(ctx context.Context, name string, q *QueryOptions) (*Pool, QueryMeta, error) {
	var out Pool
	meta, err := c.query(ctx, pathJoin("v1", "pools", name), nil, q, &out)
	if err != nil {
		return nil, meta, err
	}
	return &out, meta, nil
}

// PutPool creates or replaces a pool and returns it as stored.
func (c *Client) PutPool(ctx context.Context, p Pool) (*Pool, error) {
	if p.Name == "" {
		return nil, errors.New("amserver: pool name is required")
	}
	var out Pool
	if _, err := c.write(ctx, c.newRequest(http.MethodPut, pathJoin("v1", "pools", p.Name), nil), p, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeletePool removes an unused pool.
func (c *Client) DeletePool(ctx context.Context, name string) error {
	_, err := c.write(ctx, c.newRequest(http.MethodDelete, pathJoin("v1", "pools", name), nil), nil, nil)
	return err
}

// Nodes lists every node, whole, optionally narrowed by pool and status:
// it walks all pages (see ListNodes for summaries). The meta is the first
// page's.
func (c *Client) Nodes(ctx context.Context, f NodeFilter, q *QueryOptions) ([]Node, QueryMeta, error) {
	return collect[Node](ctx, c, "/v1/nodes", nodeParams(f, true), q)
}

// Node returns one node.
func (c *Client) Node(ctx context.Context, id string, q *QueryOptions) (*Node, QueryMeta, error) {
	var out Node
	meta, err := c.query(ctx, pathJoin("v1", "nodes", id), nil, q, &out)
	if err != nil {
		return nil, meta, err
	}
	return &out, meta, nil
}

// RegisterNode registers a node or replaces its inventory.
func (c *Client) RegisterNode(ctx context.Context, n NodeSpec) (*Node, error) {
	if n.ID == "" {
		return nil, errors.New("amserver: node id is required")
	}
	var out Node
	if _, err := c.write(ctx, c.newRequest(http.MethodPut, pathJoin("v1", "nodes", n.ID), nil), n, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeregisterNode removes a node; without force it is refused while the node
// holds reservations.
func (c *Client) DeregisterNode(ctx context.Context, id string, force bool) error {
	var params url.Values
	if force {
		params = url.Values{"force": {"true"}}
	}
	_, err := c.write(ctx, c.newRequest(http.MethodDelete, pathJoin("v1", "nodes", id), params), nil, nil)
	return err
}

// Cordon stops new placements on a node.
func (c *Client) Cordon(ctx context.Context, id string) (*Node, error) {
	return c.nodeAction(ctx, id, "cordon")
}

// Uncordon allows placements again (and ends a drain).
func (c *Client) Uncordon(ctx context.Context, id string) (*Node, error) {
	return c.nodeAction(ctx, id, "uncordon")
}

// Drain cordons a node and moves its jobs away.
func (c *Client) Drain(ctx context.Context, id string) (*Node, error) {
	return c.nodeAction(ctx, id, "drain")
}

func (c *Client) nodeAction(ctx context.Context, id, action string) (*Node, error) {
	r := c.newRequest(http.MethodPost, pathJoin("v1", "nodes", id, action), nil)
	r.idempotent = true // setting a flag twice is harmless
	r.replayable = true
	var out Node
	if _, err := c.write(ctx, r, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Assignments returns what a node's worker must run; with q.Index it blocks
// until they change.
func (c *Client) Assignments(ctx context.Context, nodeID string, q *QueryOptions) ([]Assignment, QueryMeta, error) {
	var out []Assignment
	meta, err := c.query(ctx, pathJoin("v1", "nodes", nodeID, "assignments"), nil, q, &out)
	return out, meta, err
}

// ReportStatus reports the state of one assignment.
func (c *Client) ReportStatus(ctx context.Context, nodeID, assignmentID string, s AssignmentStatus) error {
	r := c.newRequest(http.MethodPut, pathJoin("v1", "nodes", nodeID, "assignments", assignmentID, "status"), nil)
	_, err := c.write(ctx, r, s, nil)
	return err
}

// Services lists every node service, walking all pages.
func (c *Client) Services(ctx context.Context, q *QueryOptions) ([]NodeService, QueryMeta, error) {
	return collect[NodeService](ctx, c, "/v1/services", nil, q)
}

// Service returns one node service.
func (c *Client) Service(ctx context.Context, id string, q *QueryOptions) (*NodeService, QueryMeta, error) {
	var out NodeService
	meta, err := c.query(ctx, pathJoin("v1", "services", id), nil, q, &out)
	if err != nil {
		return nil, meta, err
	}
	return &out, meta, nil
}

// PutService creates or replaces a node service.
func (c *Client) PutService(ctx context.Context, s NodeService) (*NodeService, error) {
	if s.ID == "" {
		return nil, errors.New("amserver: service id is required")
	}
	var out NodeService
	if _, err := c.write(ctx, c.newRequest(http.MethodPut, pathJoin("v1", "services", s.ID), nil), s, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteService removes a node service and stops its assignments.
func (c *Client) DeleteService(ctx context.Context, id string) error {
	_, err := c.write(ctx, c.newRequest(http.MethodDelete, pathJoin("v1", "services", id), nil), nil, nil)
	return err
}

// PoolStatus returns a pool's nodes by state, spawning ones included.
func (c *Client) PoolStatus(ctx context.Context, name string, q *QueryOptions) (*PoolStatus, QueryMeta, error) {
	var out PoolStatus
	meta, err := c.query(ctx, pathJoin("v1", "pools", name, "status"), nil, q, &out)
	if err != nil {
		return nil, meta, err
	}
	return &out, meta, nil
}
