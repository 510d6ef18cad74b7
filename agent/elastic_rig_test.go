package agent_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
	"github.com/amserver/amserver/internal/testcluster"
)

// buildAmserver builds the amserver binary the test provisioner starts as
// real worker processes.
func buildAmserver(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "amserver")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "github.com/amserver/amserver/cmd/amserver")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build amserver: %v\n%s", err, out)
	}
	return bin
}

// provisionScript is the test provisioner: it logs every call, starts one
// `amserver agent --worker` per request id (a retried id starts nothing),
// and kills the worker on delete. A request counts as done only once its
// worker started: the call may be killed midway (a leader that stops) and
// is then repeated. Files in its directory steer it: "hold" delays the
// worker's start, "lose-next" makes the next create succeed without
// starting anything. Workers run in a session of their own (the exec
// provisioner kills the call's process group when the call is cancelled)
// and under timeout(1), so a test that dies without cleanup leaves nothing
// behind for long.
const provisionScript = `#!/bin/sh
dir=%q
bin=%q
id="$AMSERVER_PROVISION_REQUEST_ID"
node="$AMSERVER_PROVISION_NODE_ID"
if [ "$1" = run ]; then
  args=""
  for j in $(echo "$AMSERVER_PROVISION_JOIN" | tr , ' '); do args="$args --join $j"; done
  for s in $(echo "$AMSERVER_PROVISION_SERVERS" | tr , ' '); do args="$args --servers $s"; done
  while [ -f "$dir/hold" ]; do sleep 0.1; done
  exec timeout -k 5 -s TERM 300 "$bin" agent --worker --node-id "$node" --pool "$AMSERVER_PROVISION_POOL" \
    --capacity "$AMSERVER_PROVISION_CAPACITY" --cores "$AMSERVER_PROVISION_CORES" \
    --bind 127.0.0.1 --gossip-addr 127.0.0.1:0 --http-addr 127.0.0.1:0 --data-dir "$dir/$node" --log-level warn $args
fi
echo "$AMSERVER_PROVISION_OP $id $node $AMSERVER_PROVISION_INSTANCE_TYPE" >> "$dir/calls.log"
if [ "$AMSERVER_PROVISION_OP" = delete ]; then
  if [ -f "$dir/$node.pid" ]; then kill "$(cat "$dir/$node.pid")" 2>/dev/null; rm -f "$dir/$node.pid"; fi
  echo "$node" >> "$dir/deleted.log"
  exit 0
fi
if [ -f "$dir/req-$id" ] || [ -f "$dir/$node.pid" ]; then exit 0; fi
if [ -f "$dir/lose-next" ]; then
  rm -f "$dir/lose-next"
  echo "$id $node" >> "$dir/created.log"
  touch "$dir/req-$id"
  exit 0
fi
# The worker gets a session of its own, and writes its pid file from
# inside it, before this call counts as done: the provisioner kills this
# call's process group when its leader goes, and a worker still in that
# group would die with it while the request looked served.
setsid sh -c 'echo $$ > "$1/$2.pid"; exec "$3" run' sh "$dir" "$node" "$0" < /dev/null > "$dir/$node.log" 2>&1 &
while [ ! -s "$dir/$node.pid" ]; do sleep 0.05; done
echo "$id $node" >> "$dir/created.log"
touch "$dir/req-$id"
`

// elasticRig is a cluster of three servers (TCP Raft and gossip, as the
// dev cluster runs them) whose elastic pools provision real worker
// processes through the test provisioner.
type elasticRig struct {
	t      *testing.T
	c      *testcluster.Cluster
	dir    string
	script string
}

func newElasticRig(t *testing.T, bin string, workers int, configure func(*agent.Config)) *elasticRig {
	t.Helper()
	r := &elasticRig{t: t, dir: t.TempDir()}
	r.script = filepath.Join(r.dir, "provision.sh")
	if err := os.WriteFile(r.script, fmt.Appendf(nil, provisionScript, r.dir, bin), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.killWorkers) // registered first: runs last, for workers started as the cluster stopped
	t.Cleanup(r.dumpOnFailure)
	r.c = testcluster.New(t, 3, testcluster.TCP(), testcluster.Graceful(), testcluster.Configure(func(_ int, c *agent.Config) {
		c.DeleteTimeout = 5 * time.Second
		c.Elastic = agent.ElasticConfig{Interval: 200 * time.Millisecond, RetryMin: 200 * time.Millisecond, RetryMax: 2 * time.Second,
			CallTimeout: 20 * time.Second, DeleteGrace: 5 * time.Second, AllowExec: true}
		if configure != nil {
			configure(c)
		}
	}))
	r.c.StartWorkers(workers, nil)
	t.Cleanup(r.killWorkers) // runs first: workers leave while the servers are up
	waitReadyNodes(t, r.client(), workers)
	return r
}

// dumpOnFailure logs the provisioner's files of a failed test.
func (r *elasticRig) dumpOnFailure() {
	if !r.t.Failed() {
		return
	}
	logs, _ := filepath.Glob(filepath.Join(r.dir, "*.log"))
	for _, f := range logs {
		raw, _ := os.ReadFile(f)
		r.t.Logf("%s:\n%s", filepath.Base(f), raw)
	}
	if r.c == nil {
		return
	}
	servers := r.c.Servers()
	s := servers[len(servers)-1]
	for _, c := range servers {
		if c.Store().IsLeader() {
			s = c
		}
	}
	st := s.FSM().State()
	for _, sp := range st.Spawns("") {
		r.t.Logf("%s: spawn %+v", s.NodeID(), *sp)
	}
	for _, n := range st.Nodes("") {
		r.t.Logf("%s: node %s pool %s status %s cordoned %v", s.NodeID(), n.ID, n.Pool, n.Status, n.Cordoned)
	}
	for _, b := range st.Bundles("", "") {
		r.t.Logf("%s: bundle %s %s explain %+v", s.NodeID(), b.ID(), b.State, b.Explain)
	}
}

// killWorkers stops every worker the provisioner started. The pid files
// name timeout(1), which passes SIGTERM on to the worker (and kills it 5 s
// later if it lingers); SIGKILL on timeout itself would orphan the worker.
func (r *elasticRig) killWorkers() {
	pidFiles, _ := filepath.Glob(filepath.Join(r.dir, "*.pid"))
	var pids []int
	for _, f := range pidFiles {
		raw, err := os.ReadFile(f)
		if pid, perr := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil && perr == nil && pid > 0 {
			if syscall.Kill(pid, syscall.SIGTERM) == nil {
				pids = append(pids, pid)
			}
		}
	}
	poll.Eventually(r.t, 15*time.Second, "the provisioned workers to exit", func() error {
		for _, pid := range pids {
			if running(pid) {
				return fmt.Errorf("process %d still runs", pid)
			}
		}
		return nil
	})
}

// running reports whether process pid runs. One that exited but was not
// reaped yet (its parent is whoever adopted the orphan) is a zombie: gone.
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// "pid (comm) state …": the state follows the command's closing parenthesis.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || (stat[i+2] != 'Z' && stat[i+2] != 'X')
}

// client talks to a live server (forwarding reaches the leader).
func (r *elasticRig) client(skip ...*agent.Server) *api.Client {
	for _, s := range r.c.Servers() {
		if !slices.Contains(skip, s) {
			return r.c.Client(s)
		}
	}
	r.t.Fatal("no live server")
	return nil
}

// leader waits for a ready leader among the servers not in skip.
func (r *elasticRig) leader(skip ...*agent.Server) *agent.Server {
	r.t.Helper()
	return r.c.Leader(skip...)
}

// pool puts an elastic pool with one or two instance types using the test
// provisioner.
func (r *elasticRig) pool(p api.Pool) {
	r.t.Helper()
	p.Kind = api.PoolElastic
	if len(p.InstanceTypes) == 0 {
		p.InstanceTypes = []api.InstanceType{{Name: "small", TotalCapacity: 2, TotalCores: 2}, {Name: "big", TotalCapacity: 4, TotalCores: 4}}
	}
	if p.Provisioner == nil {
		p.Provisioner = &api.Provisioner{Command: []string{r.script}}
	}
	if _, err := r.client().PutPool(r.t.Context(), p); err != nil {
		r.t.Fatalf("put pool %s: %v", p.Name, err)
	}
}

func (r *elasticRig) submit(c *api.Client, id, pool string, capacity float64) {
	r.t.Helper()
	spec := api.BundleSpec{ID: id, Pool: pool, Jobs: []api.Job{{Name: "j", Requirements: api.Requirements{Capacity: capacity}}}}
	if _, err := c.CreateBundle(r.t.Context(), spec); err != nil {
		r.t.Fatalf("create bundle %s: %v", id, err)
	}
}

// created lists "requestId nodeId" per node the provisioner started.
func (r *elasticRig) created() []string { return r.logLines("created.log") }

// deleted lists the node ids the provisioner was asked to delete.
func (r *elasticRig) deleted() []string { return r.logLines("deleted.log") }

// createIDs are the distinct request ids of every create call.
func (r *elasticRig) createIDs() []string {
	var ids []string
	for _, l := range r.logLines("calls.log") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "create" && !slices.Contains(ids, f[1]) {
			ids = append(ids, f[1])
		}
	}
	return ids
}

func (r *elasticRig) logLines(name string) []string {
	raw, err := os.ReadFile(filepath.Join(r.dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(raw), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func (r *elasticRig) touch(name string) {
	if err := os.WriteFile(filepath.Join(r.dir, name), nil, 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *elasticRig) status(c *api.Client, pool string) *api.PoolStatus {
	r.t.Helper()
	ps, _, err := c.PoolStatus(r.t.Context(), pool, nil)
	if err != nil {
		r.t.Fatalf("pool status %s: %v", pool, err)
	}
	return ps
}

func (r *elasticRig) bundle(c *api.Client, id string) *api.Bundle {
	ctx, cancel := context.WithTimeout(r.t.Context(), 10*time.Second)
	defer cancel()
	b, _, err := c.Bundle(ctx, id, nil)
	if err != nil {
		return &api.Bundle{State: "error: " + err.Error()}
	}
	return b
}

// placedOn returns the node of a placed single-job bundle, or "".
func (r *elasticRig) placedOn(c *api.Client, id string) string {
	b := r.bundle(c, id)
	if b.State != api.StatePlaced || len(b.Replicas) == 0 || len(b.Replicas[0].Jobs) == 0 {
		return ""
	}
	return b.Replicas[0].Jobs[0].NodeID
}

// placed is the error Eventually reports while bundle id is not placed
// (node, from placedOn, is empty).
func (r *elasticRig) placed(c *api.Client, id, node string) error {
	if node != "" {
		return nil
	}
	return fmt.Errorf("bundle %s is %s", id, r.bundle(c, id).State)
}

// hasEvent reports whether the leader's state holds an event of typ.
func (r *elasticRig) hasEvent(s *agent.Server, typ, node string) bool {
	for _, e := range s.FSM().State().Events(0, 0) {
		if e.Type == typ && (node == "" || e.NodeID == node) {
			return true
		}
	}
	return false
}
