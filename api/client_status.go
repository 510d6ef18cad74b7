package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// Leader returns the current Raft leader as the server sees it.
func (c *Client) Leader(ctx context.Context) (*Leader, error) {
	var out Leader
	if _, err := c.query(ctx, "/v1/status/leader", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Peers returns the Raft configuration's servers.
func (c *Client) Peers(ctx context.Context) ([]Peer, error) {
	var out []Peer
	_, err := c.query(ctx, "/v1/status/peers", nil, nil, &out)
	return out, err
}

// Health reports whether the server is serving, and what it knows.
func (c *Client) Health(ctx context.Context) (*Health, error) {
	var out Health
	if _, err := c.query(ctx, "/v1/health", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Members returns the gossip members the server sees.
func (c *Client) Members(ctx context.Context) ([]Member, error) {
	var out []Member
	_, err := c.query(ctx, "/v1/members", nil, nil, &out)
	return out, err
}

// RaftConfiguration returns the Raft configuration, leader and indexes.
func (c *Client) RaftConfiguration(ctx context.Context, q *QueryOptions) (*RaftConfiguration, QueryMeta, error) {
	var out RaftConfiguration
	meta, err := c.query(ctx, "/v1/operator/raft", nil, q, &out)
	if err != nil {
		return nil, meta, err
	}
	return &out, meta, nil
}

// TransferLeadership asks the leader to hand over to server id ("" lets
// Raft pick a follower).
func (c *Client) TransferLeadership(ctx context.Context, id string) error {
	r := c.newRequest(http.MethodPost, "/v1/operator/raft/transfer-leadership", nil)
	_, err := c.write(ctx, r, TransferLeadershipRequest{ID: id}, nil)
	return err
}

// RemovePeer removes server id from the Raft configuration.
func (c *Client) RemovePeer(ctx context.Context, id string) error {
	r := c.newRequest(http.MethodDelete, pathJoin("v1", "operator", "raft", "peers", id), nil)
	_, err := c.write(ctx, r, nil, nil)
	return err
}

// SnapshotSave streams a snapshot of the whole state into w.
func (c *Client) SnapshotSave(ctx context.Context, w io.Writer) (QueryMeta, error) {
	resp, err := c.do(ctx, c.newRequest(http.MethodGet, "/v1/operator/snapshot", nil))
	if err != nil {
		return QueryMeta{}, err
	}
	defer closeBody(resp)
	if _, err := io.Copy(w, resp.Body); err != nil {
		return QueryMeta{}, fmt.Errorf("amserver: snapshot save: %w", err)
	}
	return queryMeta(resp.Header), nil
}

// SnapshotRestore replaces the whole cluster state with the snapshot read
// from r. It is never retried: r cannot be rewound.
func (c *Client) SnapshotRestore(ctx context.Context, r io.Reader) error {
	req := c.newRequest(http.MethodPut, "/v1/operator/snapshot", nil)
	req.stream = r
	_, err := c.write(ctx, req, nil, nil)
	return err
}

// Events streams events with an index above fromIndex into fn until ctx
// ends, fn returns an error (which Events returns), or the server closes the
// stream (nil). Keep-alive blank lines are skipped.
func (c *Client) Events(ctx context.Context, fromIndex uint64, fn func(Event) error) error {
	params := url.Values{"index": {strconv.FormatUint(fromIndex, 10)}}
	resp, err := c.do(ctx, c.newRequest(http.MethodGet, "/v1/events", params))
	if err != nil {
		return err
	}
	defer closeBody(resp)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		var ev Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return fmt.Errorf("amserver: events: bad line %q: %w", line, err)
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("amserver: events: %w", err)
	}
	return ctx.Err()
}

// StateDigest returns the answering server's digest of its local state; it
// is never forwarded, so ask every server to compare them.
func (c *Client) StateDigest(ctx context.Context) (*StateDigest, error) {
	var out StateDigest
	if _, err := c.query(ctx, "/v1/operator/digest", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
