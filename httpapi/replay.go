package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"
)

// A kept-alive connection can break under a request the other end never
// read: the leader's graceful shutdown closes its idle connections, and a
// request sent into one at that instant is lost before any answer. Go's
// Transport sends such a request again on a fresh connection, but only one
// it may replay: a body it can rewind and an idempotent method, or an
// Idempotency-Key entry (an empty one marks the request without sending
// the header). The same failure after a crash may follow a write that was
// applied, so only a write whose repeat is a no-op on the leader is marked
// (the api client keeps the same rule for its own requests):
//
//   - creating a bundle, when the body names its id: the same id and spec
//     again answers 200 with the bundle and changes nothing (without an id
//     the leader picks one, and a repeat would create a second bundle);
//   - the upserts of pools, caps, nodes, services, assignment status and
//     template archives: the same value again leaves the same state;
//   - cordon, uncordon, drain and the keyring changes: setting a flag, or a
//     key, twice is harmless;
//   - every delete: the thing stays gone (a repeat may answer notFound);
//   - validate and plan, which change nothing.
//
// Not replayed: replacing a bundle (?cas fails once it moved, and a
// finished batch bundle submitted again runs again), a leadership transfer
// (it would move leadership once more), a new ACL token (a second token),
// and a snapshot restore (its body is a stream). A failed forward of those
// is reported as outcomeUnknown (forwardFailed).
var replaySafe = map[string]bool{
	"POST /v1/bundles/validate":                 true,
	"POST /v1/bundles/plan":                     true,
	"PUT /v1/pools/:name":                       true,
	"DELETE /v1/pools/:name":                    true,
	"PUT /v1/caps":                              true,
	"PUT /v1/nodes/:id":                         true,
	"DELETE /v1/nodes/:id":                      true,
	"POST /v1/nodes/:id/cordon":                 true,
	"POST /v1/nodes/:id/uncordon":               true,
	"POST /v1/nodes/:id/drain":                  true,
	"PUT /v1/nodes/:id/assignments/:aid/status": true,
	"DELETE /v1/bundles/:id":                    true,
	"PUT /v1/services/:id":                      true,
	"DELETE /v1/services/:id":                   true,
	"PUT " + templatePath:                       true,
	"DELETE " + templatePath:                    true,
	"DELETE /v1/operator/raft/peers/:id":        true,
	"DELETE /v1/acl/tokens/:accessor":           true,
	"POST " + keyringPath:                       true,
}

// markReplayable lets the forward client send out again on a fresh
// connection when a reused one broke before any answer, if the route's
// repeat is a no-op (replaySafe); body is the buffered request body. The
// client's own idempotency headers are dropped: the leader does not
// deduplicate by key, so whether a repeat is safe is for this server to say.
func markReplayable(c echo.Context, out *http.Request, body []byte) {
	out.Header.Del("Idempotency-Key")
	out.Header.Del("X-Idempotency-Key")
	req := c.Request()
	key := req.Method + " " + c.Path()
	safe := replaySafe[key]
	if key == "POST /v1/bundles" {
		safe = namesID(body)
	}
	if safe { // a stream body (no GetBody) stays unreplayable whatever the mark
		out.Header["Idempotency-Key"] = nil // not sent: marks the request replayable for the Transport
	}
}

// namesID reports whether a bundle spec body carries its id.
func namesID(body []byte) bool {
	var v struct {
		ID string `json:"id"`
	}
	return json.Unmarshal(body, &v) == nil && v.ID != ""
}
