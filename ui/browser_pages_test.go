package ui_test

import (
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/amserver/amserver/api"
)

// search puts text in a list's search box and runs it with Enter, as a
// user does once done typing. The text is set whole, not typed key by key,
// so no half-typed expression runs first (the box runs what is typed after
// 300 ms of quiet) and the timing covers exactly one query.
func (b *browser) search(t *testing.T, sel, text string) {
	t.Helper()
	eval[bool](t, b, `(() => { const el = document.querySelector(`+jsString(sel)+`); el.value = `+jsString(text)+`; el.focus(); return true; })()`)
	b.do(t, "search "+text, chromedp.SendKeys(chromedp.CSS(sel), "\r"))
}

// browserBundles: the bundles list shows the placed bundle (it appeared
// live), and its bundle page every job's node, AZ, cores and GPU share,
// its tags as text, and an unplaceable bundle's explanation.
func browserBundles(t *testing.T, b *browser, placed *api.Bundle) {
	primary, backup := placed.Replicas[0].Jobs[0], placed.Replicas[1].Jobs[0]
	t.Run("bundle list shows its placement, live", func(t *testing.T) {
		row := `document.querySelector('#bundles-table tr[data-bundle-id="channel-ui"]')`
		b.waitJS(t, "the bundle, placed, with its primary and backup nodes",
			row+`?.querySelector('.state').textContent === 'placed' && `+
				row+`.querySelector('[data-role=primary]').textContent.includes(`+jsString(primary.NodeID)+`) && `+
				row+`.querySelector('[data-role=backup]').textContent.includes(`+jsString(backup.NodeID)+`)`)
		b.shot(t, "bundles")
	})
	t.Run("bundle page shows where every job runs", func(t *testing.T) {
		b.click(t, `#bundles-table tr[data-bundle-id="channel-ui"] a[data-link=bundles]`)
		b.waitJS(t, "the bundle page", `document.querySelector('#bundle-id')?.textContent === 'channel-ui'`)
		enc := `document.querySelector('[data-replica=primary] tr[data-job=enc]')`
		b.waitJS(t, "the primary's jobs with node, AZ, cores and GPU share",
			enc+`?.cells[2].textContent === `+jsString(primary.NodeID)+` && `+
				enc+`.cells[3].textContent.startsWith('az') && `+
				enc+`.cells[4].textContent === `+jsString(joinInts(primary.Cores))+` && `+
				enc+`.cells[5].textContent.includes('0.5')`)
		b.waitJS(t, "the tag shown as text", `document.querySelector('#bundle-tags').textContent.includes(`+jsString("note="+xssTag)+`)`)
		if eval[bool](t, b, `window.__xss === 1 || document.querySelector('#bundle-page img') !== null`) {
			t.Fatal("a tag value was rendered as HTML")
		}
		b.shot(t, "bundle-page")
	})
	t.Run("an unplaceable bundle says why", func(t *testing.T) {
		b.view(t, "bundles")
		b.click(t, `#bundles-table tr[data-bundle-id="too-big"] a[data-link=bundles]`)
		b.waitJS(t, "why too-big is unplaced", `/6 nodes evaluated.*capacity: 6/.test(document.querySelector('#bundle-explain')?.textContent)`)
		b.shot(t, "bundle-unplaceable")
	})
}

// browserNode: a node page charts reserved against allocatable (capacity
// and memory split by assignment), lists its assignments and labels, and drains on a click.
func browserNode(t *testing.T, b *browser, c *api.Client, placed *api.Bundle) {
	target := placed.Replicas[0].Jobs[0].NodeID
	t.Run("node page charts its reservations", func(t *testing.T) {
		b.view(t, "bundles")
		b.click(t, `#bundles-table tr[data-bundle-id="channel-ui"] [data-role=primary] a[data-link=nodes]`)
		b.waitJS(t, "the node page", `document.querySelector('#node-id')?.textContent === `+jsString(target))
		b.waitJS(t, "the capacity split by assignment", `document.querySelectorAll('#node-chart [data-resource=capacity] rect.chart-seg').length >= 2`)
		b.waitJS(t, "memory reserved against total, split by assignment",
			`document.querySelectorAll('#node-chart [data-resource=memory] rect.chart-seg').length >= 2 && `+
				`/2,?560 \/ 32,?768 MiB/.test(document.querySelector('#node-chart [data-resource=memory]').textContent)`)
		b.waitJS(t, "the bundle's assignments", `[...document.querySelectorAll('#node-assignments tr[data-assignment]')]
			.filter((r) => r.cells[0].textContent === 'channel-ui').length === 2`)
		b.waitJS(t, "its labels", `document.querySelector('#node-labels').textContent.includes('az=')`)
		b.shot(t, "node-page")
	})
	t.Run("drain clicked on the node page takes effect", func(t *testing.T) {
		// The primary's node, so the drain has jobs to move. Moving them is
		// the drainer's business (agent tests); here the click must set the
		// flag, and the page must show it.
		b.click(t, `#node-page button[data-action=drain]`)
		b.waitJS(t, "the confirm dialog", `document.querySelector('#confirm').open && document.querySelector('#confirm-text').textContent.includes(`+jsString(target)+`)`)
		b.shot(t, "drain-confirm")
		b.click(t, `#confirm-ok`)
		waitNode(t, c, target, "draining", func(n *api.Node) bool { return n.Draining })
		b.waitJS(t, "the node shown draining, with uncordon offered instead of drain",
			`/drain(ing|ed)/.test(document.querySelector('#node-flags')?.textContent) && `+
				`document.querySelector('#node-page button[data-action=uncordon]') && !document.querySelector('#node-page button[data-action=drain]')`)
		b.shot(t, "node-draining")
	})
}
