package ui_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
	"github.com/amserver/amserver/internal/testcluster"
)

// xssTag is user input that would run script if the UI ever rendered
// server data as HTML.
const xssTag = `<img src=x onerror="window.__xss=1">`

// TestBrowserUI drives the UI of an in-process dev cluster (6 simulated
// workers over 3 AZs) in headless Chromium: every view renders the live
// state, and actions clicked in the page take effect in the API.
func TestBrowserUI(t *testing.T) {
	b := newBrowser(t)
	// One server by default: three are as fast on an idle machine, but on a
	// loaded one under -race, 2 runs of 3 did not see every worker ready
	// within 45 s. AMSERVER_UI_SERVERS=3 loads the page from a follower.
	servers, workers := devServers(t), 6
	d := testcluster.New(t, servers, testcluster.TCP())
	d.StartWorkers(workers, nil) // the dev cluster's workers
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := d.Shutdown(ctx); err != nil {
			t.Errorf("dev cluster shutdown: %v", err)
		}
	})
	first := d.Servers()[0]
	c, err := api.New(first.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	nodes := waitNodes(t, c, workers)
	leader, err := c.Leader(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// With several servers the page comes from a follower, so reads, writes
	// and the event stream all go through its forwarding to the leader.
	base := "http://" + first.HTTPAddr() + "/ui/"
	for _, s := range d.Servers() {
		if s.HTTPAddr() != leader.HTTPAddr {
			base = "http://" + s.HTTPAddr() + "/ui/"
		}
	}
	t.Logf("leader %s at %s; the UI is loaded from %s", leader.ID, leader.HTTPAddr, base)

	t.Run("cluster page shows the leader, peers and members", func(t *testing.T) {
		b.open(t, base+"#/cluster")
		b.waitJS(t, "the leader id", `document.querySelector('#leader-id')?.textContent === `+jsString(leader.ID))
		b.waitJS(t, "every gossip member", `document.querySelectorAll('#members tr[data-member]').length === `+strconv.Itoa(servers+workers))
		b.waitJS(t, "every Raft server", `document.querySelectorAll('#servers tr[data-server]').length === `+strconv.Itoa(servers))
		b.waitJS(t, "every Raft server's gossip status", `[...document.querySelectorAll('#servers tr[data-server] td.peer-status')]
			.map((c) => c.textContent).join() === `+jsString(strings.TrimSuffix(strings.Repeat("alive,", servers), ",")))
		b.waitJS(t, "the Raft indexes", `Number(document.querySelector('#raft-last-index')?.textContent) > 0`)
		b.shot(t, "cluster")
	})

	t.Run("nodes list pages and filters on the servers", func(t *testing.T) {
		b.view(t, "nodes")
		b.waitJS(t, "every node row", `document.querySelectorAll('#nodes-table tr[data-node-id]').length === `+strconv.Itoa(workers))
		b.waitJS(t, "each node's memory", `[...document.querySelectorAll('#nodes-table tr[data-node-id] td.memory')]
			.every((c) => / \/ 32,?768 MiB$/.test(c.textContent))`)
		az := nodes[0].Labels["az"]
		var want []string
		for _, n := range nodes {
			if n.Labels["az"] == az {
				want = append(want, n.ID)
			}
		}
		slices.Sort(want)
		b.search(t, "#nodes-search", `node.labels["az"] == `+jsString(az))
		b.waitJS(t, "only the nodes of "+az, `[...document.querySelectorAll('#nodes-table tr[data-node-id]')].map((r) => r.dataset.nodeId).join() === `+jsString(strings.Join(want, ",")))
		b.waitJS(t, "the filter named as CEL", `document.querySelector('#nodes-hint').textContent.includes('CEL')`)
		b.shot(t, "nodes-filtered")
		b.search(t, "#nodes-search", `node.labels[`)
		b.waitJS(t, "the CEL error by the box", `!document.querySelector('#nodes-error').hidden && document.querySelector('#nodes-error').textContent.includes('badRequest')`)
		b.search(t, "#nodes-search", "")
		b.waitJS(t, "every node again", `document.querySelectorAll('#nodes-table tr[data-node-id]').length === `+strconv.Itoa(workers))
	})

	spec := api.BundleSpec{
		ID: "channel-ui", Pool: "default",
		Resilience: &api.Resilience{SameNode: api.Forbid, SameAz: api.Forbid, SameCloud: api.Allow},
		Tags:       map[string]string{"note": xssTag},
		Jobs: []api.Job{
			{Name: "enc", Requirements: api.Requirements{Capacity: 4, Cores: 2, GPUCapacity: 0.5, MemoryMiB: 2048, MemoryLimitMiB: 4096}},
			{Name: "pkg", Requirements: api.Requirements{Capacity: 1, MemoryMiB: 512}, CoLocateWith: []string{"enc"}},
		},
	}
	// The bundles list is open before the bundle exists: it must appear
	// through the list's blocking query, without a reload.
	b.view(t, "bundles")
	b.waitJS(t, "the empty bundles list", `document.querySelector('#bundles-list .empty') !== null`)
	if _, err := c.CreateBundle(t.Context(), spec); err != nil {
		t.Fatal(err)
	}
	placed := waitBundle(t, c, spec.ID, func(x *api.Bundle) bool { return x.State == api.StatePlaced && len(x.Replicas) == 2 })
	// No dev node has 20 capacity units: accepted with a warning in a
	// cluster pool (nodes may come), then unplaceable with an explanation.
	tooBig := api.BundleSpec{ID: "too-big", Pool: "default", Jobs: []api.Job{{Name: "huge", Requirements: api.Requirements{Capacity: 20}}}}
	if _, err := c.CreateBundle(t.Context(), tooBig); err != nil {
		t.Fatal(err)
	}
	waitBundle(t, c, tooBig.ID, func(x *api.Bundle) bool { return x.State == api.StateUnplaceable && x.Explain != nil })
	browserBundles(t, b, placed)
	browserNode(t, b, c, placed)

	t.Run("event feed shows the bundle's events", func(t *testing.T) {
		b.view(t, "events")
		for _, typ := range []string{api.EventBundleCreated, api.EventBundlePlaced} {
			b.waitJS(t, typ+" of channel-ui", `[...document.querySelectorAll('#event-list tr[data-type=`+typ+`]')]
				.some((r) => r.cells[3].textContent === 'channel-ui')`)
		}
		b.waitJS(t, "the drain's node event", `[...document.querySelectorAll('#event-list tr[data-type=nodeStatus]')]
			.some((r) => r.cells[5].textContent.includes('draining'))`)
		b.waitJS(t, "the feed is live", `document.querySelector('#feed-state .badge')?.textContent === 'live'`)
		b.shot(t, "events")
	})

	t.Run("delete clicked on the bundle page starts the deletion", func(t *testing.T) {
		b.open(t, base+"#/bundles/channel-ui")
		b.click(t, `#bundle-page button[data-action=delete]`)
		b.waitJS(t, "the confirm dialog", `document.querySelector('#confirm').open`)
		b.click(t, `#confirm-ok`)
		poll.Eventually(t, stepTimeout, "the bundle deleting after the click", func() error {
			x, _, err := c.Bundle(t.Context(), spec.ID, nil)
			if api.IsCode(err, api.CodeNotFound) || (err == nil && x.State == api.StateDeleting) {
				return nil
			}
			return fmt.Errorf("bundle not deleting after the click: %+v, %w", x, err)
		})
		b.waitJS(t, "the bundle page deleting or gone", `document.querySelector('#bundle-missing') !== null ||
			document.querySelector('#bundle-state')?.textContent === 'deleting'`)
	})
	b.checkNoProblems()
}

func devServers(t *testing.T) int {
	t.Helper()
	v := os.Getenv("AMSERVER_UI_SERVERS")
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("AMSERVER_UI_SERVERS=%q: want a server count", v)
	}
	return n
}

func waitNodes(t *testing.T, c *api.Client, want int) []api.Node {
	t.Helper()
	var nodes []api.Node
	poll.Eventually(t, 90*time.Second, fmt.Sprintf("%d ready nodes", want), func() error {
		var err error
		nodes, _, err = c.Nodes(t.Context(), api.NodeFilter{}, nil)
		status := map[string]string{}
		for _, n := range nodes {
			status[n.ID] = n.Status
		}
		if err == nil && len(nodes) == want && !slices.ContainsFunc(nodes, func(n api.Node) bool { return n.Status != api.NodeReady }) {
			return nil
		}
		return fmt.Errorf("nodes %v (err %w), want %d ready", status, err, want)
	})
	return nodes
}

func waitNode(t *testing.T, c *api.Client, id, what string, ok func(*api.Node) bool) {
	t.Helper()
	poll.Eventually(t, 60*time.Second, "node "+id+" "+what, func() error {
		n, _, err := c.Node(t.Context(), id, nil)
		if err == nil && ok(n) {
			return nil
		}
		return fmt.Errorf("node %s not %s: %+v, %w", id, what, n, err)
	})
}

func waitBundle(t *testing.T, c *api.Client, id string, ok func(*api.Bundle) bool) *api.Bundle {
	t.Helper()
	var x *api.Bundle
	poll.Eventually(t, 60*time.Second, "bundle "+id+" in the expected state", func() error {
		var err error
		x, _, err = c.Bundle(t.Context(), id, nil)
		if err == nil && ok(x) {
			return nil
		}
		return fmt.Errorf("bundle %s never reached the expected state: %+v, %w", id, x, err)
	})
	return x
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
