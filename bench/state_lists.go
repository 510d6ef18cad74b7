package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/httpapi"
	"github.com/amserver/amserver/raftstore"
)

// The state suite's list rows: the HTTP API serving the 100,000-bundle
// state it built, on loopback in the same process. Latency and bytes are
// per page of a walk of every bundle; the walk at per_page=1000 must not
// raise the process's resident set by more than listWalkRSSLimit (the
// lists page, so a walk holds a page, not the state's worth of JSON).

const listWalkRSSLimit = 50 << 20

// fsmBackend serves the API from an FSM alone: the leader of a cluster of
// one, with nothing to forward and no writes to make.
type fsmBackend struct{ f *fsm.FSM }

var errReadOnly = errors.New("bench: read-only backend")

func (b fsmBackend) State() *fsm.State        { return b.f.State() }
func (b fsmBackend) WatchCh() <-chan struct{} { return b.f.WatchCh() }
func (b fsmBackend) ServerID() string         { return "bench" }
func (b fsmBackend) IsLeader() bool           { return true }
func (b fsmBackend) Leader() (raftstore.LeaderInfo, bool) {
	return raftstore.LeaderInfo{ID: "bench"}, true
}
func (b fsmBackend) LastContact() time.Duration                            { return 0 }
func (b fsmBackend) Now() time.Time                                        { return time.Now() }
func (b fsmBackend) Members() []gossip.Member                              { return nil }
func (b fsmBackend) Member(string) (gossip.Member, bool)                   { return gossip.Member{}, false }
func (b fsmBackend) ReadBarrier(context.Context, raftstore.ReadMode) error { return nil }
func (b fsmBackend) Apply(context.Context, fsm.MessageType, any) (*fsm.Result, error) {
	return nil, errReadOnly
}
func (b fsmBackend) RaftInfo(context.Context) (raftstore.Info, error) { return raftstore.Info{}, nil }
func (b fsmBackend) TransferLeadership(context.Context, string) error { return errReadOnly }
func (b fsmBackend) RemovePeer(context.Context, string) error         { return errReadOnly }
func (b fsmBackend) SaveSnapshot(context.Context, io.Writer) error    { return errReadOnly }
func (b fsmBackend) RestoreSnapshot(context.Context, io.Reader) error { return errReadOnly }
func (b fsmBackend) Plan(context.Context, fsm.BundleSpec) (httpapi.PlanResult, error) {
	return httpapi.PlanResult{}, httpapi.ErrNotImplemented
}
func (b fsmBackend) ServersApply(int) bool { return true } // one process: every server is this one

// serveFSM serves the API over f on a loopback port until ctx ends.
func serveFSM(ctx context.Context, f *fsm.FSM) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("listen: %w", err)
	}
	s := httpapi.New(httpapi.Config{Backend: fsmBackend{f}})
	go func() { _ = s.Serve(ctx, l) }()
	return "http://" + l.Addr().String(), nil
}

// pageStats are one walk's pages: their latencies and sizes.
type pageStats struct {
	lat   []time.Duration
	bytes []int64
}

// walkList reads every page of path (a list URL with its query) and
// discards the bodies, as a client streaming them would; sample, when
// set, runs between pages.
func walkList(ctx context.Context, hc *http.Client, base, path string, sample func()) (pageStats, error) {
	var st pageStats
	next := ""
	for {
		u := base + path
		if next != "" {
			u += "&next_token=" + url.QueryEscape(next)
		}
		start := time.Now()
		n, tok, err := getPage(ctx, hc, u)
		if err != nil {
			return st, err
		}
		st.lat = append(st.lat, time.Since(start))
		st.bytes = append(st.bytes, n)
		if sample != nil {
			sample()
		}
		if next = tok; next == "" {
			return st, nil
		}
	}
}

func getPage(ctx context.Context, hc *http.Client, u string) (int64, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return n, "", err
	}
	if resp.StatusCode != http.StatusOK {
		return n, "", fmt.Errorf("GET %s: %d", u, resp.StatusCode)
	}
	return n, resp.Header.Get(api.HeaderNextToken), nil
}

// measureLists serves f and measures its bundle lists: a walk per page
// size and form, a filtered walk, and the resident set during a walk.
func measureLists(ctx context.Context, f *fsm.FSM, bundles int) ([]Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	base, err := serveFSM(ctx, f)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{}
	// The resident-set walk comes first: the walks below would leave its
	// pages in the server's shared answers for a second.
	out, err := walkRSS(ctx, hc, base, bundles)
	if err != nil {
		return out, err
	}
	for _, w := range []struct{ name, query string }{
		{"summaries, per_page=100 (default)", "?per_page=100"},
		{"summaries, per_page=1000", "?per_page=1000"},
		{"whole bundles (?full=true), per_page=1000", "?per_page=1000&full=true"},
		{"CEL filter matching 1 in 10, per_page=100", "?per_page=100&filter=" + url.QueryEscape(`bundle.id.endsWith("7")`)},
	} {
		st, err := walkList(ctx, hc, base, "/v1/bundles"+w.query, nil)
		if err != nil {
			return out, fmt.Errorf("list walk %s: %w", w.name, err)
		}
		out = append(out, pageResults(bundles, w.name, st)...)
	}
	return out, nil
}

func pageResults(bundles int, name string, st pageStats) []Result {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	var total int64
	for _, b := range st.bytes {
		total += b
	}
	lat := slices.Clone(st.lat)
	slices.Sort(lat)
	q := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	pages := len(st.lat)
	return []Result{
		{Suite: "state", Name: fmt.Sprintf("list page latency p50, %s, %d bundles", name, bundles), Value: ms(q(0.5)), Unit: "ms",
			Note: fmt.Sprintf("p99 %.1f ms, max %.1f ms over the %d pages of a walk (one client, loopback)", ms(q(0.99)), ms(lat[pages-1]), pages)},
		{Suite: "state", Name: fmt.Sprintf("list bytes per page, %s", name), Value: float64(total) / float64(pages) / 1024, Unit: "KiB",
			Note: fmt.Sprintf("%.1f MiB for the whole walk of %d pages", float64(total)/(1<<20), pages)},
	}
}

// walkRSS walks every bundle at per_page=1000, once in each form, sampling
// the resident set after each page, and reports the rise over the resident
// set before the walk. The baseline is the process as a server runs: after
// a collection, without handing freed memory back to the OS first (a
// running server's heap spans stay resident up to Go's GC target, GOGC=100;
// forcing them out would count any request's garbage as growth). What the
// rise shows is whether a walk holds more than a page at a time: one answer
// of the whole list (100,000 bundles, ~70 MiB of JSON and several times
// that in objects) would push the heap far past its target.
func walkRSS(ctx context.Context, hc *http.Client, base string, bundles int) ([]Result, error) {
	var out []Result
	for _, w := range []struct{ name, query string }{
		{"summaries (the default)", "?per_page=1000"},
		{"whole bundles (?full=true)", "?per_page=1000&full=true"},
	} {
		runtime.GC()
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		before := currentRSS()
		resetPeakRSS()
		var peak atomic.Uint64
		sample := func() { peak.Store(max(peak.Load(), currentRSS())) }
		start := time.Now()
		st, err := walkList(ctx, hc, base, "/v1/bundles"+w.query, sample)
		if err != nil {
			return out, fmt.Errorf("walk for RSS: %w", err)
		}
		took := time.Since(start)
		runtime.ReadMemStats(&ms1)
		top := max(peak.Load(), peakRSS())
		rise := top - min(top, before)
		out = append(out, Result{
			Suite: "state", Name: fmt.Sprintf("RSS rise of a full walk, %d bundles, per_page=1000, %s", bundles, w.name),
			Value: float64(rise) / (1 << 20), Unit: "MiB", Target: "<= 50 MiB", Met: Met(rise <= listWalkRSSLimit),
			Note: fmt.Sprintf("%d pages in %.1fs; resident %.0f MiB before (after loading, GC'd, GOGC=100), %.0f MiB at peak; %.0f MiB allocated by the walk, collected as it went",
				len(st.lat), took.Seconds(), float64(before)/(1<<20), float64(top)/(1<<20),
				float64(ms1.TotalAlloc-ms0.TotalAlloc)/(1<<20)),
		})
	}
	return out, nil
}
