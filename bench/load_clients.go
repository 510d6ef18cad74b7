package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/amserver/amserver/api"
)

// The load test's clients. Each is one goroutine on its own connection
// that does one thing for the whole run, as a read token holder would:
// walk the bundle list, follow the event stream from index 0, or wait in
// a blocking query that writes wake. A 429 is obeyed (Retry-After, with
// jitter) and counted; nothing else slows a client down.

// loadCounts are what the readers saw.
type loadCounts struct {
	pages, tooMany, failed, woken atomic.Int64
	bytes, eventLines             atomic.Int64
}

type reader struct {
	hc     *http.Client
	base   string
	token  string
	counts *loadCounts
}

// get sends one read; ok is a 200 whose body the caller reads and closes.
func (r *reader) get(ctx context.Context, path string) (*http.Response, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+path, nil)
	if err != nil {
		return nil, false
	}
	req.Header.Set(api.HeaderToken, r.token)
	resp, err := r.hc.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			r.counts.failed.Add(1)
			pauseCtx(ctx, 100*time.Millisecond)
		}
		return nil, false
	}
	if resp.StatusCode == http.StatusOK {
		return resp, true
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	wait := time.Second
	switch resp.StatusCode {
	case http.StatusTooManyRequests:
		r.counts.tooMany.Add(1)
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
			wait = time.Duration(s) * time.Second
		}
	default:
		r.counts.failed.Add(1)
	}
	pauseCtx(ctx, wait+rand.N(wait/2+1))
	return nil, false
}

// walk reads every page of the bundle list, over and over.
func (r *reader) walk(ctx context.Context, query string) {
	next := ""
	for ctx.Err() == nil {
		path := "/v1/bundles?" + query
		if next != "" {
			path += "&next_token=" + url.QueryEscape(next)
		}
		resp, ok := r.get(ctx, path)
		if !ok {
			continue
		}
		n, err := io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		r.counts.bytes.Add(n)
		if err == nil {
			r.counts.pages.Add(1)
			next = resp.Header.Get(api.HeaderNextToken)
		}
	}
}

// follow streams the events from index 0, resuming after each drop.
func (r *reader) follow(ctx context.Context) {
	var last uint64
	for ctx.Err() == nil {
		resp, ok := r.get(ctx, "/v1/events?index="+strconv.FormatUint(last, 10))
		if !ok {
			continue
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			r.counts.bytes.Add(int64(len(line) + 1))
			if len(line) == 0 {
				continue
			}
			r.counts.eventLines.Add(1)
			if i, ok := eventIndex(line); ok && i > 0 {
				last = i - 1 // resume with the whole of the last entry again
			}
		}
		_ = resp.Body.Close()
	}
}

// eventIndex reads an event line's index without decoding all of it.
func eventIndex(line []byte) (uint64, bool) {
	const key = `{"index":`
	if len(line) <= len(key) || string(line[:len(key)]) != key {
		return 0, false
	}
	end := len(key)
	for end < len(line) && line[end] >= '0' && line[end] <= '9' {
		end++
	}
	i, err := strconv.ParseUint(string(line[len(key):end]), 10, 64)
	return i, err == nil
}

// block waits on the first page of bundles for the next change, again and
// again: every write to bundles wakes every one of them.
func (r *reader) block(ctx context.Context) {
	var index uint64
	for ctx.Err() == nil {
		path := "/v1/bundles?per_page=100"
		if index > 0 {
			path += "&wait=60s&index=" + strconv.FormatUint(index, 10)
		}
		resp, ok := r.get(ctx, path)
		if !ok {
			continue
		}
		n, err := io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		r.counts.bytes.Add(n)
		if err == nil {
			if index > 0 {
				r.counts.woken.Add(1)
			}
			index, _ = strconv.ParseUint(resp.Header.Get(api.HeaderIndex), 10, 64)
		}
	}
}

// startReaders starts n readers spread over the servers and tokens: two
// in five walk the list (half of them ?stale, some ?full=true at 1,000 a
// page), three in ten follow events from 0, three in ten block.
func startReaders(ctx context.Context, c *loadCluster, n int, counts *loadCounts) *sync.WaitGroup {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost, tr.MaxConnsPerHost = 4*n, 2*n, 0
	hc := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	for i := range n {
		r := &reader{hc: hc, base: c.servers[i%len(c.servers)].http, token: c.read[i%len(c.read)], counts: counts}
		wg.Go(func() {
			switch i % 10 {
			case 0, 1:
				r.walk(ctx, "per_page=1000&stale")
			case 2:
				r.walk(ctx, "per_page=1000&full=true")
			case 3:
				r.walk(ctx, "per_page=100")
			case 4, 5, 6:
				r.follow(ctx)
			default:
				r.block(ctx)
			}
		})
	}
	return &wg
}

// writer creates bundles at rate per second (spread over the servers),
// recording each write's latency; a failed write is counted, not retried.
func writer(ctx context.Context, c *loadCluster, rate int, prefix string, lat *latencies) {
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	var wg sync.WaitGroup
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-tick.C:
		}
		cl := c.client(c.servers[i%len(c.servers)], c.mgmt)
		wg.Go(func() {
			// A write in flight when the phase ends finishes: cut off, it
			// counted as a failure of the servers'.
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			start := time.Now()
			_, err := cl.CreateBundle(wctx, loadSpec(fmt.Sprintf("%s-%07d", prefix, i)))
			lat.add(time.Since(start), err)
		})
	}
}

// prober reads /v1/health from s every interval, recording latency.
func prober(ctx context.Context, s *loadServer, every time.Duration, lat *latencies) {
	hc := &http.Client{Timeout: 10 * time.Second}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		start := time.Now()
		resp, err := hc.Get(s.http + "/v1/health")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("health: %d", resp.StatusCode)
			}
		}
		if ctx.Err() == nil {
			lat.add(time.Since(start), err)
		}
	}
}

// latencies is a thread-safe record of samples and failures.
type latencies struct {
	mu     sync.Mutex
	d      []time.Duration
	failed int
}

func (l *latencies) add(d time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.failed++
		return
	}
	l.d = append(l.d, d)
}

func pauseCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
