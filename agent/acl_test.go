package agent_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/internal/poll"
	"github.com/amserver/amserver/internal/testcluster"
)

const (
	testMgmtSecret   = "management-secret-for-tests"
	testWorkerSecret = "worker-w1-secret-for-tests"
)

func aclCluster(t *testing.T) *testcluster.Cluster {
	return testcluster.New(t, 3, testcluster.Configure(func(_ int, c *agent.Config) {
		c.ACL = agent.ACLConfig{Enabled: true, Tokens: []agent.ConfigToken{
			{Secret: testMgmtSecret, Kind: fsm.ACLManagement},
			{Secret: testWorkerSecret, Kind: fsm.ACLWorker, NodeID: "w1"},
		}}
	}))
}

func tokenClient(c *testcluster.Cluster, s *agent.Server, token string) *api.Client {
	return c.Client(s, api.WithToken(token), api.WithMaxRetries(0))
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
	leader := c.Leader()
	follower := c.Followers(leader)[0]
	ctx := ctxTimeout(t, 30*time.Second)
	mgmt := tokenClient(c, follower, testMgmtSecret)
	// The configured tokens appear once the leader's duty has run.
	poll.Eventually(t, 10*time.Second, "the configured management token to work", func() error {
		_, err := mgmt.ACLTokenSelf(ctx)
		return err
	})
	if _, err := tokenClient(c, follower, "").PutPool(ctx, testPool("p")); apiStatus(err) != http.StatusUnauthorized {
		t.Fatalf("anonymous write: %v, want 401", err)
	}
	created, err := mgmt.CreateACLToken(ctx, api.ACLTokenRequest{Kind: api.ACLWrite})
	if err != nil {
		t.Fatal(err)
	}
	writer := tokenClient(c, follower, created.SecretID)
	if _, err := writer.PutPool(ctx, testPool("p")); err != nil {
		t.Fatalf("write with a new write token through a follower: %v", err)
	}
	if _, _, err := writer.ACLTokens(ctx, nil); apiStatus(err) != http.StatusForbidden {
		t.Fatalf("write token listing tokens: %v, want 403", err)
	}
	worker := tokenClient(c, follower, testWorkerSecret)
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
	for _, s := range c.Servers() { // linearizable reads: revoked everywhere at once
		if _, _, err := tokenClient(c, s, created.SecretID).Pools(ctx, nil); apiStatus(err) != http.StatusUnauthorized {
			t.Fatalf("%s: revoked token: %v, want 401", s.NodeID(), err)
		}
	}
}

// TestReloadAddsConfigTokens: a token added to the configuration works
// after a reload (SIGHUP), without a restart; turning ACLs off is refused
// and changes nothing.
func TestReloadAddsConfigTokens(t *testing.T) {
	c := aclCluster(t)
	leader := c.Leader()
	ctx := ctxTimeout(t, 30*time.Second)
	const added = "write-token-added-by-a-reload"
	writer := tokenClient(c, leader, added)
	if _, err := writer.PutPool(ctx, testPool("before")); apiStatus(err) != http.StatusForbidden && apiStatus(err) != http.StatusUnauthorized {
		t.Fatalf("a token not yet configured: %v, want refused", err)
	}
	acl := agent.ACLConfig{Enabled: true, Tokens: []agent.ConfigToken{
		{Secret: testMgmtSecret, Kind: fsm.ACLManagement},
		{Secret: testWorkerSecret, Kind: fsm.ACLWorker, NodeID: "w1"},
		{Secret: added, Kind: fsm.ACLWrite},
	}}
	if err := leader.Reload(ctx, agent.ACLConfig{Tokens: acl.Tokens}); err == nil {
		t.Fatal("a reload that turns ACLs off was accepted")
	}
	for _, s := range c.Servers() {
		if err := s.Reload(ctx, acl); err != nil {
			t.Fatalf("reload %s: %v", s.NodeID(), err)
		}
	}
	poll.Eventually(t, 10*time.Second, "the reloaded token to work", func() error {
		_, err := writer.PutPool(ctx, testPool("after"))
		return err
	})
}
