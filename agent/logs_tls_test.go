package agent_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/certs"
	"github.com/amserver/amserver/internal/poll"
	"github.com/amserver/amserver/worker"
)

// TestHTTPSLogs: with TLS, a worker holding a server certificate serves
// its logs over HTTPS and a server proxies them; a worker with a client
// certificate only cannot pass the servers' check of it (502).
func TestHTTPSLogs(t *testing.T) {
	pki := newTestPKI(t)
	c := tlsCluster(t, 1, func() certs.Files { return pki.files(true, false) })
	srv := c.Servers()[0]
	ctx := ctxTimeout(t, 60*time.Second)
	cl, err := api.New(srv.HTTPURL(), api.WithTLSConfig(pki.clientTLS()), api.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.PutPool(ctx, api.Pool{Name: "tls"}); err != nil {
		t.Fatal(err)
	}
	start := func(id string, files certs.Files) *worker.Worker {
		drv, err := worker.NewDispatcher(ctx, worker.RuntimeConfig{NodeID: id, DataDir: t.TempDir(), Runtimes: []string{api.RuntimeExec}})
		if err != nil {
			t.Fatal(err)
		}
		return c.StartWorker(worker.Config{NodeID: id, Inventory: api.NodeSpec{Pool: "tls", TotalCapacity: 4, Labels: map[string]string{"w": id}},
			Join: []string{srv.Gossip().LocalAddr()}, TLS: files, PollWait: time.Second, Driver: drv})
	}
	good, bad := start("w-server-cert", pki.files(true, false)), start("w-client-cert", pki.files(false, false))
	for _, w := range []*worker.Worker{good, bad} {
		if !strings.HasPrefix(w.HTTPURL(), "https://") {
			t.Fatalf("%s publishes %q", w.NodeID(), w.HTTPURL())
		}
	}
	waitReadyNodes(t, cl, 2)
	for _, w := range []*worker.Worker{good, bad} {
		spec := api.BundleSpec{ID: "on-" + w.NodeID(), Pool: "tls", Jobs: []api.Job{{Name: "j", Requirements: api.Requirements{Capacity: 1},
			Constraints: []string{`node.labels["w"] == "` + w.NodeID() + `"`},
			Launch:      api.Launch{Driver: api.DriverExec, Command: []string{"sh", "-c", "echo over tls; exec sleep 600"}}}}}
		if _, err := cl.CreateBundle(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	goodB := bundleIs(t, ctx, cl, 30*time.Second, "on-"+good.NodeID(), "running", allRunning)
	badB := bundleIs(t, ctx, cl, 30*time.Second, "on-"+bad.NodeID(), "running", allRunning)
	poll.Eventually(t, 20*time.Second, "the logs over https", func() error {
		got, err := logText(ctx, cl, goodB.Replicas[0].Jobs[0].AssignmentID, api.LogOptions{Tail: api.TailAll})
		return poll.Check(err == nil && got == "over tls\n", "%q, %v", got, err)
	})
	// A loaded machine can make the worker miss a probe: while gossip
	// holds it suspect the answer is 503, try again; once it is alive the
	// servers' check of its certificate must fail, every time.
	poll.Eventually(t, 20*time.Second, "a worker without a server certificate refused", func() error {
		_, err := logText(ctx, cl, badB.Replicas[0].Jobs[0].AssignmentID, api.LogOptions{Tail: api.TailAll})
		if apiStatus(err) == http.StatusServiceUnavailable && api.IsCode(err, api.CodeWorkerUnreachable) {
			return poll.Check(false, "%v (suspect: try again)", err)
		}
		if apiStatus(err) != http.StatusBadGateway || !api.IsCode(err, api.CodeWorkerUnreachable) {
			t.Fatalf("a worker without a server certificate: %v, want 502 workerUnreachable", err)
		}
		return nil
	})
}
