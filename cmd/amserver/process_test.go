package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
)

// serverProc is one real `amserver agent --server` process on loopback.
type serverProc struct {
	id                   string
	httpPort, raftPort   int
	gossipPort           int
	dataDir, bin, logDir string
	join                 []string
	cmd                  *exec.Cmd
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func (p *serverProc) start(t *testing.T) {
	t.Helper()
	args := []string{"agent", "--server", "--node-id", p.id, "--data-dir", p.dataDir,
		"--bind", "127.0.0.1", "--http-addr", "127.0.0.1:" + strconv.Itoa(p.httpPort),
		"--raft-addr", "127.0.0.1:" + strconv.Itoa(p.raftPort),
		"--gossip-addr", "127.0.0.1:" + strconv.Itoa(p.gossipPort),
		"--bootstrap-expect", "3", "--timeout-scale", "4", "--log-level", "debug"}
	for _, j := range p.join {
		args = append(args, "--join", j)
	}
	logf, err := os.OpenFile(filepath.Join(p.logDir, p.id+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(p.bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.kill(); logf.Close() })
}

func (p *serverProc) kill() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_, _ = p.cmd.Process.Wait()
		p.cmd = nil
	}
}

func (p *serverProc) client(t *testing.T) *api.Client {
	c, err := api.New("127.0.0.1:" + strconv.Itoa(p.httpPort))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "amserver")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// TestThreeServerProcesses starts three real server processes with
// --bootstrap-expect 3, writes through a follower, SIGKILLs the leader,
// writes and reads on the survivors, then restarts the killed server and
// sees it catch up from its own disk.
func TestThreeServerProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	bin, dir := buildBinary(t), t.TempDir()
	procs := make([]*serverProc, 3)
	var join []string
	for i := range procs {
		p := &serverProc{id: fmt.Sprintf("s%d", i+1), httpPort: freePort(t), raftPort: freePort(t), gossipPort: freePort(t),
			dataDir: filepath.Join(dir, fmt.Sprint(i)), bin: bin, logDir: dir, join: append([]string(nil), join...)}
		p.start(t)
		join = append(join, "127.0.0.1:"+strconv.Itoa(p.gossipPort))
		procs[i] = p
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	var leaderID string
	poll.Eventually(t, 45*time.Second, "leader election", func() error {
		l, err := procs[2].client(t).Leader(ctx)
		if err == nil {
			leaderID = l.ID
		}
		return err
	})
	var leader, follower *serverProc
	for _, p := range procs {
		if p.id == leaderID {
			leader = p
		} else {
			follower = p
		}
	}
	if _, err := follower.client(t).PutPool(ctx, api.Pool{Name: "before"}); err != nil {
		t.Fatalf("write through follower: %v", err)
	}
	leader.kill()
	var survivor *serverProc
	for _, p := range procs {
		if p != leader {
			survivor = p
		}
	}
	poll.Eventually(t, 30*time.Second, "write after killing the leader", func() error {
		_, err := survivor.client(t).PutPool(ctx, api.Pool{Name: "after"})
		return err
	})
	for _, name := range []string{"before", "after"} {
		if _, _, err := follower.client(t).Pool(ctx, name, nil); err != nil {
			t.Fatalf("survivor misses pool %s: %v", name, err)
		}
	}
	leader.start(t)
	poll.Eventually(t, 30*time.Second, "restarted server catches up", func() error {
		_, _, err := leader.client(t).Pool(ctx, "after", &api.QueryOptions{Stale: true})
		return err
	})
}
