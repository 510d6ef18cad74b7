package testcluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
	"github.com/amserver/amserver/internal/testcluster"
)

// TestRestartFromMemStores: a follower killed while writes go on comes
// back from its in-memory stores at its old addresses and catches up; the
// leader's API answers through it again.
func TestRestartFromMemStores(t *testing.T) {
	c := testcluster.New(t, 3)
	leader := c.Leader()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	lc := c.Client(leader)
	if _, err := lc.PutPool(ctx, api.Pool{Name: "before"}); err != nil {
		t.Fatal(err)
	}
	down := c.Followers(leader)[0]
	poll.Eventually(t, 10*time.Second, "the follower to apply the first write", func() error {
		return poll.Check(down.FSM().State().Pool("before") != nil, "%s lacks pool before", down.NodeID())
	})
	if err := down.Kill(); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if _, err := lc.PutPool(ctx, api.Pool{Name: fmt.Sprintf("while-down-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	up := c.Restart(down, nil)
	if up.HTTPAddr() != down.HTTPAddr() || up.Store().LocalAddr() != down.Store().LocalAddr() {
		t.Fatalf("restarted at %s / %s, was %s / %s", up.HTTPAddr(), up.Store().LocalAddr(), down.HTTPAddr(), down.Store().LocalAddr())
	}
	if !up.Store().HadState() {
		t.Fatal("the restarted server found no Raft state in its stores")
	}
	poll.Eventually(t, 20*time.Second, "the restarted server to catch up", func() error {
		return poll.Check(up.FSM().State().Pool("while-down-4") != nil, "%s at index %d", up.NodeID(), up.Store().AppliedIndex())
	})
	if _, _, err := c.Client(up).Pool(ctx, "while-down-0", nil); err != nil {
		t.Fatalf("read through the restarted server: %v", err)
	}
}
