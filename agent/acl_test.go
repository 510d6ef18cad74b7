package agent

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
)

const (
	testMgmtSecret   = "management-secret-for-tests"
	testWorkerSecret = "worker-w1-secret-for-tests"
)

func aclCluster(t *testing.T) *testCluster {
	return newTestClusterWith(t, 3, func(c *Config) {
		c.ACL = ACLConfig{Enabled: true, Tokens: []ConfigToken{
			{Secret: testMgmtSecret, Kind: fsm.ACLManagement},
			{Secret: testWorkerSecret, Kind: fsm.ACLWorker, NodeID: "w1"},
		}}
	})
}

func tokenClient(t *testing.T, s *Server, token string) *api.Client {
	t.Helper()
	c, err := api.New(s.HTTPAddr(), api.WithToken(token), api.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func apiStatus(err error) int {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Status
	}
	return 0
}

// TestACLClusterEnforcesTokens: the leader writes the configured tokens;
// every server then judges requests by the replicated tokens, including
// writes a follower forwards and tokens created through the API.
func TestACLClusterEnforcesTokens(t *testing.T) {
	c := aclCluster(t)
	leader := c.leader()
	follower := c.followers(leader)[0]
	ctx := ctxTimeout(t, 30*time.Second)
	mgmt := tokenClient(t, follower, testMgmtSecret)
	// The configured tokens appear once the leader's duty has run.
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := mgmt.ACLTokenSelf(ctx); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the configured management token never worked: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := tokenClient(t, follower, "").PutPool(ctx, testPool("p")); apiStatus(err) != http.StatusUnauthorized {
		t.Fatalf("anonymous write: %v, want 401", err)
	}
	created, err := mgmt.CreateACLToken(ctx, api.ACLTokenRequest{Kind: api.ACLWrite})
	if err != nil {
		t.Fatal(err)
	}
	writer := tokenClient(t, follower, created.SecretID)
	if _, err := writer.PutPool(ctx, testPool("p")); err != nil {
		t.Fatalf("write with a new write token through a follower: %v", err)
	}
	if _, _, err := writer.ACLTokens(ctx, nil); apiStatus(err) != http.StatusForbidden {
		t.Fatalf("write token listing tokens: %v, want 403", err)
	}
	worker := tokenClient(t, follower, testWorkerSecret)
	node := api.NodeSpec{ID: "w1", Pool: "p", TotalCapacity: 4, TotalCores: 4}
	if _, err := worker.RegisterNode(ctx, node); err != nil {
		t.Fatalf("worker registering its own node: %v", err)
	}
	node.ID = "w2"
	if _, err := worker.RegisterNode(ctx, node); apiStatus(err) != http.StatusForbidden {
		t.Fatalf("worker registering another node: %v, want 403", err)
	}
	if err := mgmt.DeleteACLToken(ctx, created.Token.AccessorID); err != nil {
		t.Fatal(err)
	}
	for _, s := range c.servers { // linearizable reads: revoked everywhere at once
		if _, _, err := tokenClient(t, s, created.SecretID).Pools(ctx, nil); apiStatus(err) != http.StatusUnauthorized {
			t.Fatalf("%s: revoked token: %v, want 401", s.cfg.NodeID, err)
		}
	}
}

func TestACLConfigRejectsBadTokens(t *testing.T) {
	cases := map[string]ConfigToken{
		"short secret":        {Secret: "short", Kind: fsm.ACLManagement},
		"unknown kind":        {Secret: testMgmtSecret, Kind: "root"},
		"worker without node": {Secret: testMgmtSecret, Kind: fsm.ACLWorker},
	}
	for name, tok := range cases {
		cfg := Config{NodeID: "s1", ACL: ACLConfig{Enabled: true, Tokens: []ConfigToken{tok}}}
		if err := cfg.setDefaults(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
