package api

import (
	"context"
	"net/http"
	"net/url"
)

const keyringPath = "/v1/operator/keyring"

// Keyring lists the gossip keyring; withKeys asks for the key material too
// (workers use it to follow rotations). With q.Index it blocks until the
// keyring changes.
func (c *Client) Keyring(ctx context.Context, withKeys bool, q *QueryOptions) (*Keyring, QueryMeta, error) {
	var params url.Values
	if withKeys {
		params = url.Values{"keys": {"true"}}
	}
	var out Keyring
	meta, err := c.query(ctx, keyringPath, params, q, &out)
	if err != nil {
		return nil, meta, err
	}
	return &out, meta, nil
}

// ChangeKeyring installs, uses or removes a base64 gossip key. Use and
// remove are refused (409) while a live member has not caught up with the
// previous step, unless force is set.
func (c *Client) ChangeKeyring(ctx context.Context, op, key string, force bool) error {
	var params url.Values
	if force {
		params = url.Values{"force": {"true"}}
	}
	r := c.newRequest(http.MethodPost, keyringPath, params)
	r.idempotent = true // every operation is idempotent in the FSM
	r.replayable = true
	_, err := c.write(ctx, r, KeyringRequest{Op: op, Key: key}, nil)
	return err
}
