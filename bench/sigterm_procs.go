package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/amserver/amserver/api"
)

// stProc is one `amserver agent --server` process of the sigterm suite:
// it can be signalled, waited for and started again on its data directory
// at the addresses its peers know.
type stProc struct {
	id, http, log string
	args          []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed once the current process has exited
	exitAt time.Time
}

// stCluster is the sigterm suite's servers, as deployed: no ACLs, Raft
// timeouts at the defaults (--timeout-scale 1).
type stCluster struct {
	bin   string
	procs []*stProc
}

func startStCluster(ctx context.Context, bin, dir string, n int) (*stCluster, error) {
	ports, err := freePorts(3 * n)
	if err != nil {
		return nil, fmt.Errorf("free ports: %w", err)
	}
	c := &stCluster{bin: bin}
	addr := func(i, k int) string { return "127.0.0.1:" + strconv.Itoa(ports[3*i+k]) }
	for i := range n {
		id := fmt.Sprintf("s%d", i+1)
		p := &stProc{id: id, http: "http://" + addr(i, 0), log: filepath.Join(dir, id+".log"), args: []string{
			"agent", "--server", "--node-id", id, "--data-dir", filepath.Join(dir, id), "--bind", "127.0.0.1",
			"--http-addr", addr(i, 0), "--raft-addr", addr(i, 1), "--gossip-addr", addr(i, 2),
			"--bootstrap-expect", strconv.Itoa(n), "--log-level", "info",
		}}
		// Every other server, so that one restarted after leaving finds
		// the cluster whichever it is.
		for j := range n {
			if j != i {
				p.args = append(p.args, "--join", addr(j, 2))
			}
		}
		c.procs = append(c.procs, p)
		if err := p.start(bin); err != nil {
			return c, err
		}
	}
	return c, nil
}

// start runs the process again on its data directory; its log appends.
func (p *stProc) start(bin string) error {
	logf, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("log of %s: %w", p.id, err)
	}
	cmd := exec.Command(bin, p.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return fmt.Errorf("start %s: %w", p.id, err)
	}
	exited := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
	go func() {
		_ = cmd.Wait() // a SIGTERM'd server may exit non-zero; the log says why
		p.mu.Lock()
		p.exitAt = time.Now()
		p.mu.Unlock()
		_ = logf.Close()
		close(exited)
	}()
	return nil
}

// terminate sends SIGTERM and returns when it was sent.
func (p *stProc) terminate() (time.Time, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	at := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return at, fmt.Errorf("SIGTERM %s: %w", p.id, err)
	}
	return at, nil
}

// waitExit returns when the process exited; past within it is killed and
// the exit still timed (a MISS, not an error).
func (p *stProc) waitExit(within time.Duration) time.Time {
	p.mu.Lock()
	exited, cmd := p.exited, p.cmd
	p.mu.Unlock()
	select {
	case <-exited:
	case <-time.After(within):
		_ = cmd.Process.Kill() // no exit in time: the row will say how late
		<-exited
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitAt
}

func (p *stProc) kill() {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

func (p *stProc) client() *api.Client {
	cl, err := api.New(p.http, api.WithMaxRetries(0))
	if err != nil {
		panic(err) // the address is ours and well formed
	}
	return cl
}

func (p *stProc) health(ctx context.Context) (*api.Health, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	return p.client().Health(ctx)
}

func (c *stCluster) stop() {
	for _, p := range c.procs {
		p.kill()
	}
}

// leader is the process that says it leads.
func (c *stCluster) leader(ctx context.Context) (*stProc, error) {
	for _, p := range c.procs {
		if h, err := p.health(ctx); err == nil && h.IsLeader {
			return p, nil
		}
	}
	return nil, errors.New("no server leads")
}

// healthy waits until a leader takes a write and every server knows it,
// holds all n servers in its configuration and has applied what the leader
// had once it first took a write.
func (c *stCluster) healthy(ctx context.Context, within time.Duration) (*stProc, error) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var target uint64 // the leader's index after its first write; 0 until then
	var last error
	for {
		if last = c.check(ctx, &target); last == nil {
			return c.leader(ctx)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("cluster not healthy within %s: %w", within, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *stCluster) check(ctx context.Context, target *uint64) error {
	l, err := c.leader(ctx)
	if err != nil {
		return err
	}
	if *target == 0 {
		if _, err := l.client().PutPool(ctx, api.Pool{Name: "health-check"}); err != nil {
			return fmt.Errorf("write on %s: %w", l.id, err)
		}
		lh, err := l.health(ctx)
		if err != nil {
			return err
		}
		*target = lh.Index
	}
	for _, p := range c.procs {
		h, err := p.health(ctx)
		switch {
		case err != nil:
			return err
		case h.Leader != l.id || h.Peers != len(c.procs):
			return fmt.Errorf("%s sees leader %q and %d peers", p.id, h.Leader, h.Peers)
		case h.Index < *target:
			return fmt.Errorf("%s applied %d of %d", p.id, h.Index, *target)
		}
	}
	return nil
}

// stLoad writes to every server at a steady pace until stopped, counting
// what was acknowledged and, by kind, what failed on a server that was up
// (a refused connection is a server that is down, not a failed write).
// Its clients do not retry, so every answer a client would see shows.
type stLoad struct {
	ok     atomic.Int64
	mu     sync.Mutex
	failed map[string]int64  // kind → count
	last   map[string]string // kind → the last such error, for the log
	wg     sync.WaitGroup
	cancel context.CancelFunc
}

// The kinds of failed writes: a definite "not done, retry" answer, an
// outcome the server could not know, and a connection broken mid-request.
const (
	stNoLeader = "noLeader"
	stUnknown  = "outcomeUnknown"
	stBroken   = "connection"
	stOther    = "other"
)

func startStLoad(ctx context.Context, c *stCluster, perServer int) *stLoad {
	ctx, cancel := context.WithCancel(ctx)
	l := &stLoad{cancel: cancel, failed: map[string]int64{}, last: map[string]string{}}
	for i, p := range c.procs {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.write(ctx, p, i, time.Second/time.Duration(perServer))
		}()
	}
	return l
}

func (l *stLoad) write(ctx context.Context, p *stProc, w int, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	cl := p.client()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := cl.PutPool(wctx, api.Pool{Name: fmt.Sprintf("load-%d-%d", w, i%32)})
		cancel()
		switch {
		case err == nil:
			l.ok.Add(1)
		case errors.Is(err, syscall.ECONNREFUSED) || ctx.Err() != nil:
		default:
			l.fail(stKind(err), fmt.Sprintf("%s: %v", p.id, err))
		}
	}
}

func stKind(err error) string {
	var apiErr *api.Error
	switch {
	case api.IsCode(err, api.CodeNoLeader):
		return stNoLeader
	case errors.As(err, &apiErr) && apiErr.Status == 0:
		return stBroken // no answer: the client's outcomeUnknown on a broken connection
	case api.IsCode(err, api.CodeOutcomeUnknown):
		return stUnknown
	case errors.As(err, &apiErr):
		return stOther
	default:
		return stBroken
	}
}

func (l *stLoad) fail(kind, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failed[kind]++
	l.last[kind] = msg
}

func (l *stLoad) stop() {
	l.cancel()
	l.wg.Wait()
}

// counts is what the load saw: acknowledged writes and failures by kind.
func (l *stLoad) counts() (int64, map[string]int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ok.Load(), maps.Clone(l.failed)
}

// lastErrors are the last error of each kind.
func (l *stLoad) lastErrors() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.last)
}
