package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/amserver/amserver/api"
)

// The load test's servers run as processes of their own (the amserver
// binary of this tree, built first), so that a server's resident set is
// its own: 2,000 clients in the same process would swamp the leader's.

// loadServer is one `amserver agent --server` process.
type loadServer struct {
	id   string
	http string // http://127.0.0.1:port
	// pprof is the server's runtime profiles' address (http://...), when
	// the test takes profiles.
	pprof string
	cmd   *exec.Cmd
}

type loadCluster struct {
	servers []*loadServer
	mgmt    string // the management token's secret
	read    []string
}

// buildAmserver builds cmd/amserver of the repository at root into dir.
func buildAmserver(ctx context.Context, root, dir string) (string, error) {
	bin := filepath.Join(dir, "amserver")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/amserver")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build amserver: %w\n%s", err, out)
	}
	return bin, nil
}

func freePorts(n int) ([]int, error) {
	var out []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// startLoadCluster starts n servers with ACLs on: a management token and
// readTokens read tokens, and logs under dir.
func startLoadCluster(ctx context.Context, bin, dir string, n, readTokens int, timeoutScale float64, extra []string, pprof bool) (*loadCluster, error) {
	c := &loadCluster{mgmt: "load-management-secret-0001"}
	for i := range readTokens {
		c.read = append(c.read, fmt.Sprintf("load-read-secret-%04d", i))
	}
	ports, err := freePorts(4 * n)
	if err != nil {
		return nil, err
	}
	for i := range n {
		id := fmt.Sprintf("s%d", i+1)
		args := []string{"agent", "--server", "--node-id", id, "--data-dir", filepath.Join(dir, id), "--bind", "127.0.0.1",
			"--http-addr", "127.0.0.1:" + strconv.Itoa(ports[3*i]), "--raft-addr", "127.0.0.1:" + strconv.Itoa(ports[3*i+1]),
			"--gossip-addr", "127.0.0.1:" + strconv.Itoa(ports[3*i+2]), "--bootstrap-expect", strconv.Itoa(n),
			"--join", "127.0.0.1:" + strconv.Itoa(ports[2]), "--timeout-scale", strconv.FormatFloat(timeoutScale, 'f', -1, 64),
			"--acl-enabled", "--log-level", "warn"}
		for _, r := range c.read {
			args = append(args, "--acl-token", "read:"+r)
		}
		pprofURL := ""
		if pprof {
			addr := "127.0.0.1:" + strconv.Itoa(ports[3*n+i])
			args, pprofURL = append(args, "--pprof-addr", addr), "http://"+addr
		}
		args = append(args, extra...)
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), "AMSERVER_ACL_MANAGEMENT_TOKEN="+c.mgmt)
		logf, err := os.Create(filepath.Join(dir, id+".log"))
		if err != nil {
			return c, err
		}
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		cmd.WaitDelay = 10 * time.Second
		if err := cmd.Start(); err != nil {
			return c, fmt.Errorf("start %s: %w", id, err)
		}
		c.servers = append(c.servers, &loadServer{id: id, http: "http://127.0.0.1:" + strconv.Itoa(ports[3*i]), pprof: pprofURL, cmd: cmd})
	}
	return c, c.waitLeader(ctx, 60*time.Second)
}

func (c *loadCluster) client(s *loadServer, token string, opts ...api.Option) *api.Client {
	cl, err := api.New(s.http, append([]api.Option{api.WithToken(token)}, opts...)...)
	if err != nil {
		panic(err) // the address is ours and well formed
	}
	return cl
}

// leader returns the server that leads, as the first server sees it.
func (c *loadCluster) leader(ctx context.Context) (*loadServer, error) {
	l, err := c.client(c.servers[0], c.mgmt, api.WithMaxRetries(0)).Leader(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range c.servers {
		if s.http == l.HTTPAddr || "http://"+l.HTTPAddr == s.http {
			return s, nil
		}
	}
	for _, s := range c.servers {
		if s.id == l.ID {
			return s, nil
		}
	}
	return nil, fmt.Errorf("leader %s is none of ours", l.ID)
}

func (c *loadCluster) waitLeader(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	last := errors.New("not asked yet")
	for time.Now().Before(deadline) {
		_, err := c.leader(ctx)
		if err == nil {
			// Reads need the ACL tokens the leader writes when it starts.
			if _, _, err = c.client(c.servers[0], c.mgmt, api.WithMaxRetries(0)).Pools(ctx, nil); err == nil {
				return nil
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("no leader within %s: %w", within, last)
}

// term is the highest Raft term a server reports: each election adds one.
func (c *loadCluster) term(ctx context.Context) (uint64, error) {
	var sum uint64
	var errs []error
	for _, s := range c.servers {
		info, _, err := c.client(s, c.mgmt, api.WithMaxRetries(0)).RaftConfiguration(ctx, &api.QueryOptions{Stale: true})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sum = max(sum, info.Term)
	}
	return sum, errors.Join(errs...)
}

// rss is a server's resident set, from /proc.
func (s *loadServer) rss() uint64 {
	if s.cmd.Process == nil {
		return 0
	}
	kb, _ := procStatusOf(s.cmd.Process.Pid, "VmRSS:")
	return kb << 10
}

func (c *loadCluster) stop() {
	for _, s := range c.servers {
		if s.cmd.Process != nil {
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, s := range c.servers {
		_ = s.cmd.Wait()
	}
}
