package httpapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/amserver/amserver/api"
)

// replayRecorder is an http.RoundTripper that answers every request 200
// and records, per request, whether the client marked it replayable (the
// empty Idempotency-Key entry the Transport reads and never sends).
type replayRecorder struct {
	mu   sync.Mutex
	seen []recordedRequest
}

type recordedRequest struct {
	method, path string
	body         []byte
	replayable   bool
}

func (r *replayRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body) // a recorder: a short read is what it records
		_ = req.Body.Close()
	}
	_, marked := req.Header["Idempotency-Key"]
	r.mu.Lock()
	r.seen = append(r.seen, recordedRequest{method: req.Method, path: req.URL.Path, body: body, replayable: marked})
	r.mu.Unlock()
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader("{}")), Request: req}, nil
}

// TestClientAndForwardAgreeOnReplays ties the two lists of writes that may
// be sent again after a broken connection: the api client's (per method)
// and the forward hop's (replaySafe, per route). A client that replays a
// write the server deems unsafe could apply it twice; a server list the
// client never matches is dead. Every write the client can send is
// called here; a new client write missing from calls fails the coverage
// check below only if it hits a replaySafe route, so add new ones here.
func TestClientAndForwardAgreeOnReplays(t *testing.T) {
	f := newEnv(t, newTestBackend("s1"))
	rec := &replayRecorder{}
	c, err := api.New("http://amserver.test", api.WithHTTPClient(&http.Client{Transport: rec}), api.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	spec := validSpec("b1")
	calls := []func(context.Context) error{
		func(ctx context.Context) error { _, err := c.CreateBundle(ctx, spec); return err },
		func(ctx context.Context) error { _, err := c.ValidateBundle(ctx, spec); return err },
		func(ctx context.Context) error { _, err := c.PlanBundle(ctx, spec); return err },
		func(ctx context.Context) error { _, err := c.ReplaceBundle(ctx, spec, 3); return err },
		func(ctx context.Context) error { _, err := c.DeleteBundle(ctx, "b1"); return err },
		func(ctx context.Context) error { _, err := c.SetCaps(ctx, api.ClusterCaps{}); return err },
		func(ctx context.Context) error { return c.ChangeKeyring(ctx, "install", "k", false) },
		func(ctx context.Context) error { _, err := c.PutPool(ctx, api.Pool{Name: "p"}); return err },
		func(ctx context.Context) error { return c.DeletePool(ctx, "p") },
		func(ctx context.Context) error { _, err := c.RegisterNode(ctx, api.NodeSpec{ID: "n1"}); return err },
		func(ctx context.Context) error { return c.DeregisterNode(ctx, "n1", true) },
		func(ctx context.Context) error { _, err := c.Cordon(ctx, "n1"); return err },
		func(ctx context.Context) error { _, err := c.Uncordon(ctx, "n1"); return err },
		func(ctx context.Context) error { _, err := c.Drain(ctx, "n1"); return err },
		func(ctx context.Context) error { return c.ReportStatus(ctx, "n1", "a1", api.AssignmentStatus{}) },
		func(ctx context.Context) error { _, err := c.PutService(ctx, api.NodeService{ID: "s"}); return err },
		func(ctx context.Context) error { return c.DeleteService(ctx, "s") },
		func(ctx context.Context) error {
			_, err := c.PutTemplate(ctx, "t", bytes.NewReader([]byte("x")))
			return err
		},
		func(ctx context.Context) error { return c.DeleteTemplate(ctx, "t") },
		func(ctx context.Context) error { _, err := c.CreateACLToken(ctx, api.ACLTokenRequest{}); return err },
		func(ctx context.Context) error { return c.DeleteACLToken(ctx, "acc") },
		func(ctx context.Context) error { return c.TransferLeadership(ctx, "s2") },
		func(ctx context.Context) error { return c.RemovePeer(ctx, "s2") },
		func(ctx context.Context) error { return c.SnapshotRestore(ctx, strings.NewReader("snap")) },
	}
	for _, call := range calls {
		_ = call(ctx) // the recorder's "{}" does not always decode; only the request counts
	}
	covered := map[string]bool{}
	for _, req := range rec.seen {
		route := routeOf(t, f.s, req.method, req.path)
		covered[route] = true
		server := replaySafe[route] || route == "POST /v1/bundles" && namesID(req.body)
		if req.replayable != server {
			t.Errorf("%s (route %s): the client marks it replayable=%v, the forward hop replaySafe=%v",
				req.method+" "+req.path, route, req.replayable, server)
		}
	}
	for route := range replaySafe {
		if !covered[route] {
			t.Errorf("replaySafe route %s: no client write reaches it (add its client call here, or drop the entry)", route)
		}
	}
}

// routeOf is the registered route ("METHOD /path/:param") that serves
// method and path on s.
func routeOf(t *testing.T, s *Server, method, path string) string {
	t.Helper()
	ec := s.echo.NewContext(httptest.NewRequest(method, path, nil), httptest.NewRecorder())
	s.echo.Router().Find(method, path, ec)
	if ec.Path() == "" {
		t.Fatalf("%s %s: no route", method, path)
	}
	return method + " " + ec.Path()
}
