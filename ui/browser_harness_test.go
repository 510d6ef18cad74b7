package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The browser tests drive the UI in a real headless Chromium. Without one
// they skip, unless AMSERVER_REQUIRE_BROWSER=1 (CI), where they fail.
const (
	envRequireBrowser = "AMSERVER_REQUIRE_BROWSER"
	envArtifacts      = "AMSERVER_UI_ARTIFACTS"
	envChromium       = "AMSERVER_CHROMIUM" // a browser binary to use instead of searching PATH
	stepTimeout       = 30 * time.Second
)

var browserNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"}

func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(envChromium); p != "" {
		return p
	}
	for _, name := range browserNames {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("no Chromium found (looked for %s in PATH; set %s to a browser binary)",
		strings.Join(browserNames, ", "), envChromium)
	if os.Getenv(envRequireBrowser) == "1" {
		t.Fatalf("%s, and %s=1 requires the browser tests to run", msg, envRequireBrowser)
	}
	t.Skip(msg)
	return ""
}

// artifactDir is $AMSERVER_UI_ARTIFACTS (relative to the repository root,
// so that CI's ui/out means the same from any package), else a temp dir.
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(envArtifacts)
	if dir == "" {
		dir = t.TempDir()
	} else if !filepath.IsAbs(dir) {
		dir = filepath.Join(repoRoot(t), dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("artifact dir: %v", err)
	}
	t.Logf("screenshots go to %s", dir)
	return dir
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatalf("no go.mod above %s", dir)
		}
	}
}

// browser is one headless Chromium tab at a laptop's screen size. It
// records uncaught page exceptions and CSP violations as problems.
type browser struct {
	t     *testing.T
	ctx   context.Context
	dir   string
	mu    sync.Mutex
	probs []string
	logs  []string // every console error and warning, for a failure's log
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	chrome := chromiumPath(t) // skips (or fails) before anything is set up
	dir := artifactDir(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome),
		chromedp.NoSandbox, // the tests run as root in CI
		chromedp.WindowSize(1366, 768),
		chromedp.Flag("disable-gpu", true),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	b := &browser{t: t, ctx: ctx, dir: dir}
	// The first run starts the browser, which lives as long as the context
	// of that run: it must be the tab's own, not one with a timeout.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start %s: %v", chrome, err)
	}
	go b.watchConsole(chromedp.Console(ctx))
	return b
}

func (b *browser) watchConsole(messages iter.Seq2[chromedp.ConsoleMessage, error]) {
	for m, err := range messages {
		if err != nil {
			return
		}
		line := fmt.Sprintf("%s %s:%d: %s", m.Type, m.URL, m.Line+1, m.Text)
		b.mu.Lock()
		if m.IsException() || strings.Contains(m.Text, "Content Security Policy") {
			b.probs = append(b.probs, line)
		}
		if m.IsException() || m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleWarning {
			b.logs = append(b.logs, line)
		}
		b.mu.Unlock()
	}
}

// checkNoProblems fails on any exception or CSP violation seen so far.
func (b *browser) checkNoProblems() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.probs {
		b.t.Errorf("page problem: %s", p)
	}
}

func (b *browser) do(t *testing.T, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.fail(t, "%s: %v", what, err)
	}
}

func (b *browser) open(t *testing.T, url string) {
	t.Helper()
	b.do(t, "navigate to "+url, chromedp.Navigate(url))
}

// view switches views the way a user does, through the top bar.
func (b *browser) view(t *testing.T, name string) {
	t.Helper()
	b.click(t, `#nav a[data-view=`+name+`]`)
	b.waitJS(t, "the "+name+" view", `document.querySelector('#view').dataset.view === `+jsString(name))
}

// click clicks the first element sel matches once it is visible, with
// the element's own click() in one JavaScript turn. A click at the
// element's coordinates (chromedp.Click) was lost when a live table
// re-rendered between finding the row and pressing the mouse: the press
// landed on a row that was no longer there (a red CI run's "an unplaceable
// bundle says why").
func (b *browser) click(t *testing.T, sel string) {
	t.Helper()
	b.waitJS(t, "click "+sel, `(() => {
		const el = document.querySelector(`+jsString(sel)+`);
		if (!el || el.getClientRects().length === 0) return false;
		el.click();
		return true;
	})()`)
}

// waitJS waits until the JavaScript expression is truthy. A page that
// reloads meanwhile (the UI does once when its scripts fail to load) takes
// the poll's execution context with it: the poll starts again in the new
// page, within the same time.
func (b *browser) waitJS(t *testing.T, what, expr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout+5*time.Second)
	defer cancel()
	deadline := time.Now().Add(stepTimeout)
	for {
		_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr,
			chromedp.WithPollingTimeout(time.Until(deadline)), chromedp.WithPollingInterval(100*time.Millisecond)))
		if err == nil {
			return
		}
		if !contextLost(err) || time.Until(deadline) <= 0 {
			b.fail(t, "waiting for %s: %v", what, err)
		}
		select { // the new page's context appears once it starts loading
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// contextLost says whether err is a page's JavaScript context that went
// away under an evaluation (a navigation or reload).
func contextLost(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Cannot find context with specified id") ||
		strings.Contains(msg, "Execution context was destroyed") ||
		strings.Contains(msg, "Inspected target navigated or closed")
}

// eval returns the value of a JavaScript expression.
func eval[T any](t *testing.T, b *browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.fail(t, "evaluate %s: %v", expr, err)
	}
	return v
}

// shot saves a full-page PNG screenshot as an artifact.
func (b *browser) shot(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	path := filepath.Join(b.dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Errorf("write %s: %v", path, err)
	}
}

// fail saves a screenshot and the page's text, so a failure in CI can be
// understood from the artifacts, then fails the test.
func (b *browser) fail(t *testing.T, format string, args ...any) {
	t.Helper()
	name := "FAILED-" + strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	b.shot(t, name)
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	if text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`)); err == nil {
		t.Logf("page text:\n%s", text)
	}
	// What the page fetched, and how it went: a module that did not load
	// leaves the page as the HTML alone.
	if loads, err := chromedp.Run(ctx, chromedp.Evaluate[string](pageLoads)); err == nil {
		t.Logf("page loads:\n%s", loads)
	}
	b.mu.Lock()
	for _, l := range b.logs {
		t.Logf("console: %s", l)
	}
	b.mu.Unlock()
	t.Fatalf(format, args...)
}

// pageLoads lists the document's state and every resource it fetched,
// with the HTTP status and the milliseconds each took.
const pageLoads = `[document.location.href + ' ' + document.readyState,
  ...performance.getEntriesByType('resource').map((e) =>
    e.name + ' ' + e.responseStatus + ' ' + Math.round(e.startTime) + '+' + Math.round(e.duration) + 'ms')].join('\n')`

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}
