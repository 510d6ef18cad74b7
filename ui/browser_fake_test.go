package ui_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/ui"
)

const fakeToken = "s3cret-token"

// fakeAPI answers what the UI reads, but only with the right token (as a
// server with ACLs would), can fail GET /v1/nodes with a server error, and
// serves the event stream in awkward pieces: a keep-alive line, a line
// split across writes, then an end of stream the UI must resume from.
type fakeAPI struct {
	mu           sync.Mutex
	eventIndexes []string // the ?index= of every authorised events request
	logQueries   []string // the query of every logs request
	failNodes    atomic.Bool
	moreLogs     chan struct{} // closed: a follower gets one more line
}

// fakeJobMessage is why b-1's job pkg failed: two lines, the second
// looking like HTML.
const fakeJobMessage = "image \"pkg:v9\" is not on this node\n<img src=x onerror=window.__msgxss=1>"

// fakeBundle is b-1, placed: its primary's job enc on n-1, and pkg, which
// failed there.
func fakeBundle() api.Bundle {
	return api.Bundle{BundleSpec: api.BundleSpec{ID: "b-1", Pool: "default", Jobs: []api.Job{{Name: "enc"}, {Name: "pkg"}}},
		State: api.StatePlaced, Replicas: []api.Replica{{Index: 0, Role: api.RolePrimary, State: api.StatePlaced,
			Jobs: []api.JobPlacement{{Name: "enc", NodeID: "n-1", Status: api.JobRunning, AssignmentID: "b-1:0:enc@n-1"},
				{Name: "pkg", NodeID: "n-1", Status: api.JobFailed, Message: fakeJobMessage}}}}}
}

// fakeFinishedBundle is a complete batch bundle: its job holds no node,
// and its assignment names the node it ran on.
func fakeFinishedBundle() api.Bundle {
	return api.Bundle{BundleSpec: api.BundleSpec{ID: "b-2", Pool: "default", Kind: api.KindBatch, Jobs: []api.Job{{Name: "step"}}},
		State: api.StateComplete, Replicas: []api.Replica{{Index: 0, Role: api.RolePrimary, State: api.StateComplete,
			Jobs: []api.JobPlacement{{Name: "step", Status: api.JobExited, AssignmentID: "b-2:0:step@n-2"}}}}}
}

// logs answers the job's output in pieces; a follower gets a line that
// looks like HTML once moreLogs is closed, then waits for the caller.
func (f *fakeAPI) logs(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.logQueries = append(f.logQueries, r.URL.RawQuery)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	rc := http.NewResponseController(w)
	_, _ = w.Write([]byte("line " + r.URL.Query().Get("stream") + " 1\nline 2"))
	_ = rc.Flush()
	_, _ = w.Write([]byte("\n"))
	if r.URL.Query().Get("follow") != "true" {
		return
	}
	_ = rc.Flush()
	select {
	case <-f.moreLogs:
		_, _ = w.Write([]byte("<img src=x onerror=window.__logxss=1>\n"))
		_ = rc.Flush()
	case <-r.Context().Done():
		return
	}
	<-r.Context().Done()
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(api.HeaderToken) != fakeToken {
		writeJSON(w, http.StatusUnauthorized, api.ErrorBody{Error: &api.Error{Code: api.CodeUnauthorized, Message: "an ACL token is required"}})
		return
	}
	leader := &api.Leader{ID: "fake-leader", RaftAddr: "10.0.0.1:7071", HTTPAddr: "10.0.0.1:7070"}
	switch r.URL.Path {
	case "/v1/status/leader":
		writeJSON(w, http.StatusOK, leader)
	case "/v1/operator/raft":
		writeJSON(w, http.StatusOK, api.RaftConfiguration{Leader: leader, ServerID: "fake-leader", State: "Leader", Term: 3, LastIndex: 42,
			Servers: []api.Peer{{ID: "fake-leader", Address: "10.0.0.1:7071", Suffrage: "voter", Leader: true}}})
	case "/v1/status/peers":
		writeJSON(w, http.StatusOK, []api.Peer{{ID: "fake-leader", Address: "10.0.0.1:7071", Suffrage: "voter", Leader: true}})
	case "/v1/nodes":
		if f.failNodes.Load() {
			writeJSON(w, http.StatusInternalServerError, api.ErrorBody{Error: &api.Error{Code: api.CodeInternal, Message: "the disk is on fire"}})
			return
		}
		writeJSON(w, http.StatusOK, []any{})
	case "/v1/members", "/v1/bundles":
		writeJSON(w, http.StatusOK, []any{})
	case "/v1/bundles/b-1":
		writeJSON(w, http.StatusOK, fakeBundle())
	case "/v1/bundles/b-2":
		writeJSON(w, http.StatusOK, fakeFinishedBundle())
	case "/v1/assignments/b-1:0:enc@n-1/logs":
		f.logs(w, r)
	case "/v1/events":
		f.events(w, r)
	default:
		writeJSON(w, http.StatusNotFound, api.ErrorBody{Error: &api.Error{Code: api.CodeNotFound, Message: "no " + r.URL.Path}})
	}
}

func (f *fakeAPI) events(w http.ResponseWriter, r *http.Request) {
	index := r.URL.Query().Get("index")
	f.mu.Lock()
	f.eventIndexes = append(f.eventIndexes, index)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set(api.HeaderIndex, "9")
	rc := http.NewResponseController(w)
	write := func(s string) {
		_, _ = w.Write([]byte(s))
		_ = rc.Flush()
	}
	if index == "0" || index == "" {
		write(`{"index":5,"type":"bundleCreated","bundleId":"b-1","message":"bundle b-1 created"}` + "\n\n")
		write(`{"index":7,"type":"bundlePlaced","bund`)
		write(`leId":"b-1","message":"bundle b-1 placed"}` + "\n")
		return // the stream ends; the UI must come back with ?index=7
	}
	if index == "7" {
		write("\n" + `{"index":9,"type":"nodeStatus","nodeId":"n-1","message":"node n-1 is ready"}` + "\n")
	}
	<-r.Context().Done()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// TestBrowserTokenFeedAndErrors: a 401 asks for a token, which is then sent
// on every request; the event feed reassembles split lines, skips
// keep-alives and resumes from the last index after the stream ends; and
// an API error is shown with its code and message.
func TestBrowserTokenFeedAndErrors(t *testing.T) {
	b := newBrowser(t)
	fake := &fakeAPI{moreLogs: make(chan struct{})}
	mux := http.NewServeMux()
	mux.Handle("/v1/", fake)
	mux.Handle("/ui/", http.StripPrefix("/ui", ui.Handler()))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	t.Run("401 asks for a token", func(t *testing.T) {
		b.open(t, srv.URL+"/ui/#/overview")
		b.waitJS(t, "the token panel", `!document.querySelector('#token-panel').hidden &&
			document.querySelector('#token-reason').textContent.includes('401 unauthorized')`)
		b.waitJS(t, "the error banner", `document.querySelector('#errors').textContent.includes('an ACL token is required')`)
		b.shot(t, "token-prompt")
		b.do(t, "type the token", chromedp.SendKeys(chromedp.CSS("#token-input"), fakeToken))
		b.click(t, "#token-save")
		b.waitJS(t, "the overview with the token", `document.querySelector('#leader-id')?.textContent === 'fake-leader'`)
		b.waitJS(t, "the 401 banners cleared", `!document.querySelector('#errors').textContent.includes('an ACL token is required')`)
		if got := eval[string](t, b, `localStorage.getItem('amserver.token')`); got != fakeToken {
			t.Fatalf("stored token %q", got)
		}
	})

	t.Run("event feed resumes from the last index", func(t *testing.T) {
		b.view(t, "events")
		b.waitJS(t, "events 5, 7 and 9", `[...document.querySelectorAll('#event-list tr[data-index]')].map((r) => r.dataset.index).join() === '9,7,5'`)
		b.waitJS(t, "the feed live again", `document.querySelector('#feed-state .badge')?.textContent === 'live'`)
		fake.mu.Lock()
		got := slices.Clone(fake.eventIndexes)
		fake.mu.Unlock()
		if len(got) < 2 || got[0] != "0" || got[1] != "7" {
			t.Fatalf("authorised event requests asked for indexes %v, want 0 then 7", got)
		}
		b.shot(t, "events-fake")
	})

	t.Run("the bundle page shows a job's logs and follows them", func(t *testing.T) {
		b.open(t, srv.URL+"/ui/#/bundles/b-1")
		b.waitJS(t, "the primary's job offered", `document.querySelector('#logs-job')?.value === 'b-1:0:enc@n-1'`)
		b.waitJS(t, "its output", `document.querySelector('#bundle-logs').textContent === 'line stdout 1\nline 2\n'`)
		eval[bool](t, b, `(() => { const s = document.querySelector('#logs-stream'); s.value = 'stderr'; return s.dispatchEvent(new Event('change')); })()`)
		b.waitJS(t, "the stderr output", `document.querySelector('#bundle-logs').textContent.startsWith('line stderr 1')`)
		b.click(t, "#logs-follow")
		b.waitJS(t, "following", `document.querySelector('#logs-state').textContent === 'following…' &&
			document.querySelector('#bundle-logs').textContent === 'line stderr 1\nline 2\n'`)
		close(fake.moreLogs)
		b.waitJS(t, "the line written later, as text", `document.querySelector('#bundle-logs').textContent.endsWith('<img src=x onerror=window.__logxss=1>\n')`)
		if eval[bool](t, b, `window.__logxss === 1 || document.querySelector('#bundle-logs img') !== null`) {
			t.Fatal("log output was rendered as HTML")
		}
		fake.mu.Lock()
		got := slices.Clone(fake.logQueries)
		fake.mu.Unlock()
		if !slices.Contains(got, "follow=true&stream=stderr&tail=200") && !slices.Contains(got, "stream=stderr&tail=200&follow=true") {
			t.Fatalf("logs queries %v: no follow of stderr with the default tail", got)
		}
		b.shot(t, "bundle-logs")
	})

	t.Run("a finished batch job's output is offered with the node it ran on", func(t *testing.T) {
		b.open(t, srv.URL+"/ui/#/bundles/b-2")
		b.waitJS(t, "the finished job offered", `(() => { const o = document.querySelector('#logs-job option');
			return o?.value === 'b-2:0:step@n-2' && o.textContent === 'primary · step (ran @ n-2)'; })()`)
		b.open(t, srv.URL+"/ui/#/bundles/b-1")
	})

	t.Run("the bundle page says why a job failed", func(t *testing.T) {
		msg := `document.querySelector('[data-replica=primary] tr[data-job-message=pkg]')`
		b.waitJS(t, "pkg's message, as text, under its row",
			msg+`?.textContent === `+jsString(fakeJobMessage)+` && `+msg+`.previousElementSibling.dataset.job === 'pkg' && `+
				`!document.querySelector('[data-replica=primary] tr[data-job-message=enc]')`)
		if eval[bool](t, b, `window.__msgxss === 1 || document.querySelector('#bundle-page tr.job-message img') !== null`) {
			t.Fatal("a job's message was rendered as HTML")
		}
		b.shot(t, "bundle-job-message")
	})

	t.Run("API errors are shown", func(t *testing.T) {
		fake.failNodes.Store(true)
		b.view(t, "nodes")
		b.waitJS(t, "the nodes error", `[...document.querySelectorAll('#errors .error')].some((e) =>
			e.dataset.where === 'Nodes' && e.textContent.includes('internal') && e.textContent.includes('the disk is on fire'))`)
		b.shot(t, "api-error")
	})

	t.Run("forgetting the token asks again", func(t *testing.T) {
		b.click(t, "#token-button")
		b.click(t, "#token-clear")
		b.waitJS(t, "the token panel after a 401", `!document.querySelector('#token-panel').hidden &&
			document.querySelector('#token-reason').textContent.includes('401')`)
		if got := eval[bool](t, b, `localStorage.getItem('amserver.token') === null`); !got {
			t.Fatal("the token is still stored")
		}
	})
	b.checkNoProblems()
}

// TestBrowserSaysWhenScriptsFail: a module that does not load leaves the
// app unrun; the page reloads once and, when that fails too, says so
// instead of "Loading…" for good; a page whose scripts all load never
// shows that.
func TestBrowserSaysWhenScriptsFail(t *testing.T) {
	b := newBrowser(t)
	var failEvents atomic.Bool
	var fails atomic.Int32
	files := ui.Handler()
	mux := http.NewServeMux()
	mux.Handle("/v1/", &fakeAPI{moreLogs: make(chan struct{})})
	mux.Handle("/ui/", http.StripPrefix("/ui", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failEvents.Load() && r.URL.Path == "/events.js" {
			fails.Add(1)
			http.Error(w, "injected failure", http.StatusInternalServerError)
			return
		}
		files.ServeHTTP(w, r)
	})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	failEvents.Store(true)
	b.open(t, srv.URL+"/ui/#/bundles")
	b.waitJS(t, "the boot failure message", `document.querySelector('#boot-failed')?.textContent.includes('did not load')`)
	if n := fails.Load(); n != 2 {
		t.Fatalf("events.js was refused %d times, want 2: the page and its one reload", n)
	}
	b.shot(t, "boot-failed")

	failEvents.Store(false)
	b.open(t, "about:blank")
	b.open(t, srv.URL+"/ui/#/bundles")
	b.waitJS(t, "the app booted", `window.__amserverBooted === true && document.querySelector('#bundles-search') !== null`)
	if eval[bool](t, b, `document.querySelector('#boot-failed') !== null`) {
		t.Fatal("the boot failure message shows on a page whose scripts loaded")
	}
	b.checkNoProblems()
}

// TestBrowserRecoversFromAMomentaryFailure: a module whose fetch fails
// once (a network change, a server restarting) does not leave the page
// broken: it reloads by itself and boots.
func TestBrowserRecoversFromAMomentaryFailure(t *testing.T) {
	b := newBrowser(t)
	var fails atomic.Int32
	files := ui.Handler()
	mux := http.NewServeMux()
	mux.Handle("/v1/", &fakeAPI{moreLogs: make(chan struct{})})
	mux.Handle("/ui/", http.StripPrefix("/ui", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/events.js" && fails.CompareAndSwap(0, 1) {
			http.Error(w, "injected failure", http.StatusInternalServerError)
			return
		}
		files.ServeHTTP(w, r)
	})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	b.open(t, srv.URL+"/ui/#/bundles")
	b.waitJS(t, "the app booted after its reload", `window.__amserverBooted === true && document.querySelector('#bundles-search') !== null`)
	if fails.Load() != 1 {
		t.Fatal("the injected failure never happened")
	}
	if eval[bool](t, b, `document.querySelector('#boot-failed') !== null`) {
		t.Fatal("the boot failure message shows on a page that recovered")
	}
}
