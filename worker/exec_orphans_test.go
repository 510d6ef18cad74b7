package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
)

// helperWorkerEnv makes this test binary a worker-like process that runs
// one exec workload (TestExecWorkerHelper) until it is killed.
const helperWorkerEnv = "AMSERVER_TEST_EXEC_WORKER"

// TestExecWorkerHelper is not a test: run by TestExecChildDiesWithWorker,
// it starts a shell through the exec driver (pinned, so forked as a pinned
// child is) that writes its pid and its background child's, and blocks.
func TestExecWorkerHelper(t *testing.T) {
	dir := os.Getenv(helperWorkerEnv)
	if dir == "" {
		t.Skip("only run by TestExecChildDiesWithWorker")
	}
	d, err := NewExecDriver(filepath.Join(dir, "tasks"), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "pids")
	script := `sleep 1000 & echo "$$ $!" > ` + out + `.tmp && mv ` + out + `.tmp ` + out + `; wait`
	d.Ensure(context.Background(), api.Assignment{
		ID: "b1:0:job@w1", Desired: api.DesiredRun, Cores: []int{runtime.NumCPU() - 1},
		Launch: api.Launch{Driver: "exec", Command: []string{"sh", "-c", script}},
	})
	if ev := nextEvent(t, d); ev.State != api.JobRunning {
		t.Fatalf("event %+v", ev)
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // until the test kills this process (or leaves)
}

// TestExecChildDiesWithWorker: a worker killed with SIGKILL takes its exec
// child with it (parent-death signal), and the next run's Recover kills
// what is left of the child's process group (here a background job).
func TestExecChildDiesWithWorker(t *testing.T) {
	requireProc(t)
	dir := t.TempDir()
	worker := exec.Command(os.Args[0], "-test.run=^TestExecWorkerHelper$", "-test.count=1")
	worker.Env = append(os.Environ(), helperWorkerEnv+"="+dir)
	var logs bytes.Buffer
	worker.Stdout, worker.Stderr = &logs, &logs
	stdin, err := worker.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var pids []int
	poll.Eventually(t, 60*time.Second, "the workload to start", func() error {
		if worker.ProcessState != nil {
			t.Fatalf("the worker ended: %s", logs.String())
		}
		pids, err = readPids(filepath.Join(dir, "pids"))
		return err
	})
	t.Cleanup(killLater(pids))
	shell, job := pids[0], pids[1]

	if err := worker.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = worker.Wait()
	poll.Eventually(t, 10*time.Second, "the workload killed with its worker", func() error {
		return poll.Check(gone(shell), "the shell %d still runs", shell)
	})

	d, err := NewExecDriver(filepath.Join(dir, "tasks"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 10*time.Second, "the rest of its process group killed at the next start", func() error {
		return poll.Check(gone(job), "the shell's background job %d still runs", job)
	})
}

// TestExecRecoverKillsRecordedChildren: Recover kills the process group
// of a recorded child that still runs, and a group member left by a dead
// child that carries its assignment; it spares a process that took a
// recorded pid (another start time, another boot) and a member of a group
// by that id that does not carry the assignment.
func TestExecRecoverKillsRecordedChildren(t *testing.T) {
	requireProc(t)
	root := t.TempDir()
	live := startGroup(t, nil, "exec sleep 1000")
	record(t, root, "live", live.Process.Pid, nil)
	liveDone := make(chan struct{})
	go func() { _ = live.Wait(); close(liveDone) }()

	orphan := orphanedMember(t, root, "orphan", true)
	stranger := orphanedMember(t, root, "stranger", false)
	reused := startGroup(t, nil, "exec sleep 1000")
	record(t, root, "reused", reused.Process.Pid, func(r *childRecord) { r.Start++ })
	reboot := startGroup(t, nil, "exec sleep 1000")
	record(t, root, "reboot", reboot.Process.Pid, func(r *childRecord) { r.Boot = "another boot" })

	d, err := NewExecDriver(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 10*time.Second, "the recorded child killed", func() error {
		select {
		case <-liveDone:
			return nil
		default:
			return fmt.Errorf("process %d still runs", live.Process.Pid)
		}
	})
	poll.Eventually(t, 10*time.Second, "the dead child's group member killed", func() error {
		return poll.Check(gone(orphan), "process %d still runs", orphan)
	})
	for what, pid := range map[string]int{"a reused pid": reused.Process.Pid, "a pid of another boot": reboot.Process.Pid, "a member without the assignment": stranger} {
		if gone(pid) {
			t.Errorf("%s (%d) was killed", what, pid)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(root, "*", childRecordFile)); len(left) != 0 {
		t.Errorf("records left: %v", left)
	}
}

func requireProc(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil || runtime.GOOS != "linux" {
		t.Skip("needs Linux and /proc")
	}
}

// startGroup starts a shell script in a process group of its own, as the
// driver starts a child, and kills the group when the test ends.
func startGroup(t *testing.T, env []string, script string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
	return cmd
}

// record writes the child's record as the driver does, edited by change.
func record(t *testing.T, root, id string, pid int, change func(*childRecord)) {
	t.Helper()
	if err := os.MkdirAll(taskDir(root, id), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := recordChild(root, id, pid); err != nil {
		t.Fatal(err)
	}
	if change == nil {
		return
	}
	path := filepath.Join(taskDir(root, id), childRecordFile)
	var r childRecord
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil {
		t.Fatal(err)
	}
	change(&r)
	if b, err = json.Marshal(r); err == nil {
		err = os.WriteFile(path, b, 0o640)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// orphanedMember records a shell that starts a background job and is then
// killed (as the parent-death signal kills it), and returns the job's pid:
// its process group outlives the shell. withAssignment puts the
// assignment in the environment, as the driver does.
func orphanedMember(t *testing.T, root, id string, withAssignment bool) int {
	t.Helper()
	var env []string
	if withAssignment {
		env = []string{"AMSERVER_ASSIGNMENT=" + id}
	}
	out := filepath.Join(t.TempDir(), "pid")
	sh := startGroup(t, env, `sleep 1000 & echo "$$ $!" > `+out+`.tmp && mv `+out+`.tmp `+out+`; wait`)
	record(t, root, id, sh.Process.Pid, nil)
	var pids []int
	poll.Eventually(t, 10*time.Second, "the background job", func() (err error) {
		pids, err = readPids(out)
		return err
	})
	t.Cleanup(killLater(pids[1:]))
	_ = sh.Process.Kill()
	_ = sh.Wait()
	return pids[1]
}

// gone: no such process, or a zombie (its new parent may never reap it).
func gone(pid int) bool {
	p, err := readProc(pid)
	return err != nil || p.state == 'Z'
}

func readPids(path string) ([]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var pids []int
	for f := range strings.FieldsSeq(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, err
		}
		pids = append(pids, pid)
	}
	if len(pids) != 2 {
		return nil, fmt.Errorf("%s: %q", path, b)
	}
	return pids, nil
}

// killLater returns a cleanup that kills what is left of pids, sparing a
// process that has since taken one of their pids.
func killLater(pids []int) func() {
	starts := map[int]uint64{}
	for _, pid := range pids {
		if p, err := readProc(pid); err == nil {
			starts[pid] = p.start
		}
	}
	return func() {
		for pid, start := range starts {
			if p, err := readProc(pid); err == nil && p.start == start {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}
