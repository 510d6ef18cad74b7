//go:build upgrade

package upgrade

import (
	"bytes"
	"errors"
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
)

// proc is one amserver process of the cluster: a server or a worker, its
// fixed flags (node id, data dir, addresses) and the binary it runs now.
type proc struct {
	id      string
	server  bool
	bin     string
	dataDir string
	log     string // the process's stderr and stdout, appended across restarts
	http    int
	raft    int // servers only
	gossip  int
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd exits
	exitErr error
}

// layout is the cluster's addresses: three servers and two workers on
// loopback, each with its own ports and data directory.
type layout struct {
	servers []*proc
	workers []*proc
}

func newLayout(t *testing.T, oldBin string) *layout {
	ports := freePorts(t, 3*3+2*2)
	dir := t.TempDir()
	l := &layout{}
	next := func() int { p := ports[0]; ports = ports[1:]; return p }
	for i := range 3 {
		id := fmt.Sprintf("s%d", i+1)
		l.servers = append(l.servers, &proc{id: id, server: true, bin: oldBin, dataDir: filepath.Join(dir, id),
			log: filepath.Join(dir, id+".log"), http: next(), raft: next(), gossip: next()})
	}
	for i := range 2 {
		id := fmt.Sprintf("w%d", i+1)
		l.workers = append(l.workers, &proc{id: id, bin: oldBin, dataDir: filepath.Join(dir, id),
			log: filepath.Join(dir, id+".log"), http: next(), gossip: next()})
	}
	return l
}

// freePorts finds n loopback TCP ports nobody listens on, or takes them in
// order from AMSERVER_UPGRADE_PORT when it is set (a fixed range).
func freePorts(t *testing.T, n int) []int {
	if base, err := strconv.Atoi(os.Getenv("AMSERVER_UPGRADE_PORT")); err == nil && base > 0 {
		out := make([]int, n)
		for i := range out {
			out[i] = base + i
		}
		return out
	}
	var out []int
	var ls []net.Listener
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("find a free port: %v", err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		_ = l.Close()
	}
	return out
}

func addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

func (p *proc) url() string { return "http://" + addr(p.http) }

// args are the flags a process starts with. Only the binary changes on an
// upgrade (docs/operations.md §5: the same --node-id and --data-dir).
func (l *layout) args(p *proc, newBin string) []string {
	a := []string{"agent", "--node-id", p.id, "--data-dir", p.dataDir, "--bind", "127.0.0.1",
		"--advertise", "127.0.0.1", "--http-addr", addr(p.http), "--gossip-addr", addr(p.gossip),
		"--timeout-scale", "2", "--log-level", "info"}
	for _, s := range l.servers {
		if s != p {
			a = append(a, "--join", addr(s.gossip))
		}
	}
	if !p.server {
		a = append(a, "--worker", "--driver", "none", "--capacity", "16", "--cores", "4", "--memory-mib", "8192",
			"--az", "az-"+p.id)
		for _, s := range l.servers {
			a = append(a, "--servers", s.url())
		}
		return a
	}
	a = append(a, "--server", "--raft-addr", addr(p.raft), "--bootstrap-expect", "3")
	if p.bin == newBin {
		// The settle window is new (flag and all): a short one keeps the
		// rollout check quick.
		a = append(a, "--rollout-settle", "1s")
	}
	return a
}

func (l *layout) start(t *testing.T, p *proc, newBin string) {
	t.Helper()
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("open %s: %v", p.log, err)
	}
	fmt.Fprintf(f, "==== %s starting %s\n", time.Now().Format(time.RFC3339Nano), p.bin)
	p.cmd = exec.Command(p.bin, l.args(p, newBin)...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	// A test binary killed by its timeout skips the cleanups: the
	// processes die with it instead of holding their ports.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		_ = f.Close()
		t.Fatalf("start %s: %v", p.id, err)
	}
	p.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) {
		p.exitErr = cmd.Wait()
		_ = f.Close()
		close(done)
	}(p.cmd, p.done)
}

// stop sends sig and waits for the exit; a process still running after
// 15 s is killed and the test fails (SIGTERM promises five seconds).
func (p *proc) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("%s did not stop within 15 s of %v", p.id, sig)
	}
	p.cmd = nil
}

// exited reports whether the process ended by itself, and how.
func (p *proc) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.exitErr
	default:
		return false, nil
	}
}

func (p *proc) client(t *testing.T) *api.Client {
	c, err := api.New(p.url(), api.WithMaxRetries(0))
	if err != nil {
		t.Fatalf("client for %s: %v", p.id, err)
	}
	return c
}

// tail is the end of the process's log, for failure messages.
func (p *proc) tail(n int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// hasSnapshot reports whether the server's data directory holds a Raft
// snapshot (a directory with a meta.json under some snapshots/).
func (p *proc) hasSnapshot() (bool, error) {
	found := false
	err := filepath.WalkDir(p.dataDir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "meta.json" && filepath.Base(filepath.Dir(filepath.Dir(path))) == "snapshots" {
			found = true
		}
		return nil
	})
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return found, err
}
