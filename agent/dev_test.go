package agent

import (
	"testing"
	"time"

	"github.com/amserver/amserver/api"
)

// TestDevClusterThreeServers starts the embedded cluster the way `amserver
// dev --servers 3` does (real TCP Raft, real gossip, bootstrap-expect) and
// checks that every simulated worker registers and turns ready.
func TestDevClusterThreeServers(t *testing.T) {
	d, err := StartDev(t.Context(), DevConfig{HTTPAddr: "127.0.0.1:0", Servers: 3, Workers: 6})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Shutdown(t.Context()) })
	c, err := api.New(d.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxTimeout(t, 60*time.Second)
	deadline := time.Now().Add(45 * time.Second)
	for {
		nodes, _, err := c.Nodes(ctx, api.NodeFilter{}, nil)
		ready, azs := 0, map[string]bool{}
		for _, n := range nodes {
			if n.Status == api.NodeReady {
				ready++
				azs[n.Labels["az"]] = true
			}
		}
		if err == nil && ready == 6 && len(azs) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("workers not ready: %d ready, azs %v, err %v", ready, azs, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	peers, err := c.Peers(ctx)
	if err != nil || len(peers) != 3 {
		t.Fatalf("raft peers %+v err %v", peers, err)
	}
}
