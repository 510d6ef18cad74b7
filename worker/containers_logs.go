package worker

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// taskLogs copies a task's container output into its directory's
// stdout.log and stderr.log: one `docker logs --follow` per container,
// each line prefixed with the container's service for a compose stack.
// Docker keeps the output too; the files are what a later Logs method
// serves, the same way for every runtime.
type taskLogs struct {
	ctx       context.Context
	cancel    context.CancelFunc
	mu        sync.Mutex // one writer at a time per file
	stdout    *os.File
	stderr    *os.File
	followers map[string]*follower // by container id
	adopted   time.Time            // when the files were last written before this run
	copying   sync.WaitGroup       // the followers' goroutines
}

// logDrainGrace is how long closing a task's logs waits for the followers
// of its removed containers to copy what is left (`docker logs --follow`
// ends with its container), before it cuts them off.
const logDrainGrace = 10 * time.Second

type follower struct {
	running bool
	ended   time.Time
}

// followLogs starts copying the output of every container of the task that
// runs, or that has not been copied yet (a crash's last words); d.mu is
// held.
func (d *containerDriver) followLogs(t *ctask, rows []psRow) {
	if len(rows) == 0 {
		return
	}
	if t.logs == nil {
		l, err := newTaskLogs(d.ctx, t.dir)
		if err != nil {
			d.logger.Warn("cannot keep the workload's output", "assignment", t.id, "err", err)
			return
		}
		t.logs = l
	}
	for _, r := range rows {
		f := t.logs.followers[r.ID]
		if f != nil && (f.running || r.State != "running") {
			continue
		}
		since := ""
		switch {
		case f != nil:
			since = f.ended.UTC().Format(time.RFC3339Nano)
		case !t.logs.adopted.IsZero():
			since = t.logs.adopted.UTC().Format(time.RFC3339Nano)
		}
		if f == nil {
			f = &follower{}
			t.logs.followers[r.ID] = f
		}
		f.running = true
		l := t.logs
		l.copying.Add(1)
		go func() {
			defer l.copying.Done()
			d.follow(l, f, r, since)
		}()
	}
}

func newTaskLogs(parent context.Context, dir string) (*taskLogs, error) {
	var adopted time.Time
	if st, err := os.Stat(filepath.Join(dir, stdoutLog)); err == nil {
		adopted = st.ModTime() // output up to here was copied by an earlier run
	}
	stdout, stderr, err := openLogs(dir)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(parent)
	return &taskLogs{ctx: ctx, cancel: cancel, stdout: stdout, stderr: stderr,
		followers: map[string]*follower{}, adopted: adopted}, nil
}

func (d *containerDriver) follow(l *taskLogs, f *follower, r psRow, since string) {
	prefix := d.backend.logPrefix(r)
	out := &lineWriter{mu: &l.mu, f: l.stdout, prefix: prefix}
	errw := &lineWriter{mu: &l.mu, f: l.stderr, prefix: prefix}
	err := d.cli.follow(l.ctx, r.ID, since, out, errw)
	out.flush()
	errw.flush()
	if err != nil && l.ctx.Err() == nil {
		d.logger.Debug("following container output ended", "container", r.ID, "err", err)
	}
	d.mu.Lock()
	f.running, f.ended = false, time.Now()
	d.mu.Unlock()
}

// close lets the followers finish for up to grace (their containers are
// gone: what they still copy is the output's end, which the next run's
// lines must follow, not lose), then stops them and closes the files.
// It must not be called with the driver's lock held.
func (l *taskLogs) close(grace time.Duration) {
	done := make(chan struct{})
	go func() {
		l.copying.Wait()
		close(done)
	}()
	timer := time.NewTimer(grace)
	select {
	case <-done:
	case <-timer.C:
		l.cancel()
		<-done
	}
	timer.Stop()
	l.cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = l.stdout.Close()
	_ = l.stderr.Close()
}

// lineWriter writes whole lines, each with a prefix, to a file shared with
// other writers: lines of different containers never interleave.
type lineWriter struct {
	mu     *sync.Mutex
	f      *os.File
	prefix string
	buf    []byte
}

const maxLine = 64 << 10

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := indexByte(w.buf, '\n')
		if i < 0 && len(w.buf) < maxLine {
			return len(p), nil
		}
		if i < 0 {
			i = len(w.buf) - 1 // an endless line is cut
		}
		w.emit(w.buf[:i+1])
		w.buf = w.buf[i+1:]
	}
}

func (w *lineWriter) emit(line []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, _ = w.f.WriteString(w.prefix)
	_, _ = w.f.Write(line)
	if line[len(line)-1] != '\n' {
		_, _ = w.f.WriteString("\n")
	}
}

func (w *lineWriter) flush() {
	if len(w.buf) > 0 {
		w.emit(w.buf)
		w.buf = nil
	}
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}
