package worker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// A batch job (api.Assignment.RunOnce) runs to its end, and then its
// bundle's end stops its assignment: the driver removes the task's
// directory, and with it the only copy of the job's output. So the last
// stop of a batch task moves its stdout.log and stderr.log into a
// retainStore instead, where the log endpoint serves them as a finished
// log until they expire (Config.RetainFinished) or more than maxRetained
// tasks are kept, so that a stream of short jobs cannot fill the disk.

const (
	// DefaultRetainFinished is how long a finished batch job's output
	// stays readable when Config.RetainFinished is 0.
	DefaultRetainFinished = time.Hour
	// maxRetained bounds how many finished tasks' output is kept: the
	// oldest goes first.
	maxRetained = 256
	// retainedIDFile holds the assignment id in a retained directory:
	// taskName is a one-way hash, and a worker restart must find the id.
	retainedIDFile = "assignment"
)

// retainStore keeps finished batch tasks' output under root, one
// directory per task (taskName), on the same filesystem as the tasks'
// directories so that keeping is a rename.
type retainStore struct {
	root   string
	logger *slog.Logger
	now    func() time.Time
	every  time.Duration // how often run prunes; 0: pruneInterval

	mu      sync.Mutex
	maxAge  time.Duration // < 0: keep nothing
	maxKeep int
	kept    map[string]retainedTask // by assignment id
}

type retainedTask struct {
	dir string
	at  time.Time // when the task was stopped
}

// openRetainStore loads what an earlier run retained under root, so that
// it stays readable and is pruned in its turn; a directory without a
// valid id file (a keep that did not finish) is removed.
func openRetainStore(root string, logger *slog.Logger, now func() time.Time) (*retainStore, error) {
	if err := os.MkdirAll(root, 0o750); err != nil {
		return nil, fmt.Errorf("retained output dir: %w", err)
	}
	s := &retainStore{root: root, logger: logger, now: now, maxAge: DefaultRetainFinished, maxKeep: maxRetained, kept: map[string]retainedTask{}}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("retained output dir: %w", err)
	}
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		id, at, err := readRetained(dir)
		if err != nil || taskName(id) != e.Name() {
			s.logger.Debug("removing an incomplete retained task", "dir", dir, "err", err)
			if err := os.RemoveAll(dir); err != nil {
				s.logger.Warn("cannot remove retained output", "dir", dir, "err", err)
			}
			continue
		}
		s.kept[id] = retainedTask{dir: dir, at: at}
	}
	return s, nil
}

// readRetained reads a retained directory's assignment id; its age is the
// id file's mtime, which keep sets to the time of the stop.
func readRetained(dir string) (string, time.Time, error) {
	path := filepath.Join(dir, retainedIDFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("read id: %w", err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("stat id: %w", err)
	}
	id := strings.TrimSpace(string(b))
	if id == "" {
		return "", time.Time{}, errors.New("empty id file")
	}
	return id, st.ModTime(), nil
}

// setMaxAge sets the retention period: 0 is DefaultRetainFinished, a
// negative period keeps nothing.
func (s *retainStore) setMaxAge(d time.Duration) {
	if d == 0 {
		d = DefaultRetainFinished
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maxAge = d
}

// keep moves the output files of task id out of its directory src, which
// the caller then removes. A task that wrote no file keeps nothing. A
// failure leaves the files where they are (and so lost with src).
func (s *retainStore) keep(id, src string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.maxAge < 0 {
		return nil
	}
	dst := filepath.Join(s.root, taskName(id))
	delete(s.kept, id) // an earlier run of the same assignment is replaced
	if err := os.RemoveAll(dst); err != nil {
		return fmt.Errorf("replace retained output: %w", err)
	}
	if err := os.MkdirAll(dst, 0o750); err != nil {
		return fmt.Errorf("retained output dir: %w", err)
	}
	moved, err := moveLogs(src, dst)
	if err == nil && moved {
		err = s.writeID(dst, id)
	}
	if err != nil || !moved {
		_ = os.RemoveAll(dst)
		return err
	}
	s.kept[id] = retainedTask{dir: dst, at: s.now()}
	s.trim()
	return nil
}

// moveLogs renames stdout.log and stderr.log from src to dst; moved says
// whether either existed.
func moveLogs(src, dst string) (moved bool, err error) {
	for _, name := range []string{stdoutLog, stderrLog} {
		err := os.Rename(filepath.Join(src, name), filepath.Join(dst, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("retain %s: %w", name, err)
		}
		moved = true
	}
	return moved, nil
}

// writeID records the assignment id last, so that a directory counts only
// once its files are in; its mtime records the stop, in the store's clock.
func (s *retainStore) writeID(dir, id string) error {
	path := filepath.Join(dir, retainedIDFile)
	if err := os.WriteFile(path+".tmp", []byte(id+"\n"), 0o640); err != nil {
		return fmt.Errorf("write retained id: %w", err)
	}
	at := s.now()
	if err := os.Chtimes(path+".tmp", at, at); err != nil {
		return fmt.Errorf("date retained id: %w", err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return fmt.Errorf("write retained id: %w", err)
	}
	return nil
}

// lookup returns the directory of task id's retained output; false when
// it is not kept or has expired (pruning may not have run yet).
func (s *retainStore) lookup(id string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.kept[id]
	if !ok || s.expired(k, s.now()) {
		return "", false
	}
	return k.dir, true
}

func (s *retainStore) expired(k retainedTask, now time.Time) bool {
	return s.maxAge < 0 || now.Sub(k.at) >= s.maxAge
}

// prune removes what expired, then the oldest beyond the count bound.
func (s *retainStore) prune() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for id, k := range s.kept {
		if s.expired(k, now) {
			s.drop(id)
		}
	}
	s.trim()
}

// trim drops the oldest tasks beyond maxKeep; s.mu is held.
func (s *retainStore) trim() {
	if len(s.kept) <= s.maxKeep {
		return
	}
	ids := make([]string, 0, len(s.kept))
	for id := range s.kept {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return s.kept[a].at.Compare(s.kept[b].at) })
	for _, id := range ids[:len(ids)-s.maxKeep] {
		s.drop(id)
	}
}

// drop forgets a task and removes its files; s.mu is held. A directory
// that cannot be removed is not served, and removed again at the next
// start (it keeps its id file).
func (s *retainStore) drop(id string) {
	dir := s.kept[id].dir
	delete(s.kept, id)
	if err := os.RemoveAll(dir); err != nil {
		s.logger.Warn("cannot remove retained output", "assignment", id, "dir", dir, "err", err)
	}
}

// run prunes at once and then periodically until ctx ends.
func (s *retainStore) run(ctx context.Context) {
	s.prune()
	every := s.every
	if every <= 0 {
		s.mu.Lock()
		every = pruneInterval(s.maxAge)
		s.mu.Unlock()
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.prune()
		}
	}
}

// pruneInterval: a minute, or a quarter of a shorter retention period,
// so that files do not stay much past their expiry.
func pruneInterval(maxAge time.Duration) time.Duration {
	if maxAge <= 0 {
		return time.Minute
	}
	return min(time.Minute, max(maxAge/4, 10*time.Millisecond))
}
