package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// Profiles of a loaded cluster (amload -profile DIR): every server serves
// Go's runtime profiles at a loopback --pprof-addr, and a third of the way
// into the read load the test takes a CPU profile of the leader and of one
// follower, then the leader's heap (in-use and allocated) and goroutines,
// and last a short execution trace of each. `go tool trace -pprof=sched`
// on a trace sums how long goroutines waited for a processor once
// runnable, by the stack that made them runnable (the waker's, such as
// Raft answering a write's future): time a CPU profile cannot show.

// profileTargets are the profiles taken, relative to a server's pprof
// address, and the file each goes to.
func profileTargets(cpu time.Duration) [][2]string {
	secs := strconv.Itoa(max(1, int(cpu.Seconds())))
	// The load test's traces grew by about 0.2 MB a second; 10 s hold
	// some 200 writes at its rate and end before a 1-minute load does.
	traceSecs := strconv.Itoa(max(1, int(min(cpu/2, 10*time.Second).Seconds())))
	return [][2]string{
		{"/debug/pprof/heap", "heap.pprof"},
		{"/debug/pprof/goroutine", "goroutine.pprof"},
		{"/debug/pprof/profile?seconds=" + secs, "cpu.pprof"},
		{"/debug/pprof/heap", "heap-after.pprof"},
		{"/debug/pprof/trace?seconds=" + traceSecs, "trace.out"},
	}
}

// takeProfiles waits until a third of the phase has passed, then writes
// the leader's and one follower's profiles into dir.
func takeProfiles(ctx context.Context, c *loadCluster, leader *loadServer, phase time.Duration, dir string, progress func(string, ...any)) {
	if !pauseUntil(ctx, phase/3) {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		progress("profiles: %v", err)
		return
	}
	cpu := min(20*time.Second, phase/3)
	done := make(chan struct{})
	for _, s := range c.servers {
		role := "follower-" + s.id
		if s == leader {
			role = "leader-" + s.id
		}
		go func() {
			defer func() { done <- struct{}{} }()
			for _, t := range profileTargets(cpu) {
				path := filepath.Join(dir, role+"-"+t[1])
				if err := fetchProfile(ctx, s.pprof+t[0], path); err != nil {
					progress("profile %s: %v", path, err)
				}
			}
		}()
	}
	for range c.servers {
		<-done
	}
	progress("profiles written to %s", dir)
}

func pauseUntil(ctx context.Context, d time.Duration) bool {
	pauseCtx(ctx, d)
	return ctx.Err() == nil
}

func fetchProfile(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
