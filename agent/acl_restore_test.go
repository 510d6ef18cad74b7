package agent_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/amserver/amserver/internal/poll"
	"github.com/amserver/amserver/internal/testcluster"
)

// TestRestoreKeepsConfiguredTokens: a snapshot of a cluster without ACLs
// (or with other tokens) restored into a cluster with ACLs replaces the
// token table too; the configured tokens, the management one included,
// must work right after, or the operator who restored is locked out until
// the next leader.
func TestRestoreKeepsConfiguredTokens(t *testing.T) {
	ctx := ctxTimeout(t, 60*time.Second)
	plain := testcluster.New(t, 1)
	if _, err := plain.Client(plain.Leader()).PutPool(ctx, testPool("from-plain")); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := plain.Client(plain.Leader()).SnapshotSave(ctx, &buf); err != nil {
		t.Fatalf("save: %v", err)
	}

	c := aclCluster(t)
	mgmt := tokenClient(c, c.Leader(), testMgmtSecret)
	poll.Eventually(t, 10*time.Second, "the configured management token to work", func() error {
		_, err := mgmt.ACLTokenSelf(ctx)
		return err
	})
	if err := mgmt.SnapshotRestore(ctx, bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if _, _, err := mgmt.Pool(ctx, "from-plain", nil); err != nil {
		t.Fatalf("the management token on the leader right after the restore: %v", err)
	}
	for _, s := range c.Followers(c.Leader()) {
		cl := tokenClient(c, s, testMgmtSecret)
		poll.Eventually(t, 10*time.Second, s.NodeID()+" to accept the management token", func() error {
			_, _, err := cl.Pool(ctx, "from-plain", nil)
			return err
		})
	}
}
