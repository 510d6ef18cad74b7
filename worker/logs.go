package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// logReader sends one task's output file: the requested tail, then, when
// following, what is appended, until the task ends or ctx is done. It
// never holds more than one read buffer of the file. It keeps the file
// open while it follows: a finished batch job's output is moved to the
// retain store and its directory removed as soon as its bundle ends,
// often before the follower's next look, and what the job wrote last
// must still reach the follower.
type logReader struct {
	path string // "" : the task keeps no output
	// state says whether the task is still held and may still write.
	state func() (live, held bool)
	every time.Duration // how often a follower looks for more
	w     io.Writer
	flush func()
	f     *os.File // the file being sent; nil before it exists
	off   int64
}

// send writes the last tail lines (all with tail < 0) and, with follow,
// what follows.
func (r *logReader) send(ctx context.Context, tail int, follow bool) error {
	defer r.close()
	if err := r.sendTail(tail); err != nil {
		return err
	}
	if !follow {
		return nil
	}
	t := time.NewTicker(r.every)
	defer t.Stop()
	for {
		live, held := r.state()
		// Whatever was written before the task ended is still sent.
		if err := r.sendNew(); err != nil || !live || !held {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (r *logReader) close() {
	if r.f != nil {
		_ = r.f.Close()
		r.f = nil
	}
}

func (r *logReader) sendTail(tail int) error {
	if err := r.open(); err != nil || r.f == nil {
		return err
	}
	st, err := r.f.Stat()
	if err != nil {
		return fmt.Errorf("stat log: %w", err)
	}
	start, err := tailOffset(r.f, st.Size(), tail)
	if err != nil {
		return err
	}
	r.off = start
	return r.drain()
}

// sendNew sends what was appended to the open file since the last read;
// then, when the path names another file (the task was started again and
// writes a new one), that file from its start. A path that names nothing
// (the output moved to the retain store, or removed) keeps the open file.
func (r *logReader) sendNew() error {
	if r.f != nil {
		if err := r.drain(); err != nil {
			return err
		}
		if !r.replaced() {
			return nil
		}
		r.close()
	}
	if err := r.open(); err != nil || r.f == nil {
		return err
	}
	r.off = 0
	return r.drain()
}

// replaced reports whether the path now names a file other than the open
// one.
func (r *logReader) replaced() bool {
	at, err := os.Stat(r.path)
	if err != nil {
		return false
	}
	cur, err := r.f.Stat()
	return err == nil && !os.SameFile(at, cur)
}

// open opens the file at the path; r.f stays nil when it does not exist
// (yet).
func (r *logReader) open() error {
	if r.path == "" {
		return nil
	}
	f, err := os.Open(r.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	r.f = f
	return nil
}

// drain sends the open file from the offset to its current end; a file
// that shrank (rewritten) is sent again from its start.
func (r *logReader) drain() error {
	st, err := r.f.Stat()
	if err != nil {
		return fmt.Errorf("stat log: %w", err)
	}
	size := st.Size()
	if size < r.off {
		r.off = 0
	}
	if size == r.off {
		return nil
	}
	if _, err := r.f.Seek(r.off, io.SeekStart); err != nil {
		return fmt.Errorf("seek log: %w", err)
	}
	n, err := io.CopyN(r.w, r.f, size-r.off)
	r.off += n
	if n > 0 {
		r.flush()
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("send log: %w", err)
	}
	return nil
}

// tailOffset is where the last n lines of the file's first size bytes
// start (0 for all with n < 0, size for none). A final line without its
// newline counts as a line. It reads backwards a block at a time.
func tailOffset(f io.ReaderAt, size int64, n int) (int64, error) {
	if n < 0 {
		return 0, nil
	}
	if n == 0 {
		return size, nil
	}
	const block = 32 << 10
	buf := make([]byte, block)
	seen := 0
	end := size
	for end > 0 {
		start := max(end-block, 0)
		chunk := buf[:end-start]
		if _, err := f.ReadAt(chunk, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("read log: %w", err)
		}
		for i := len(chunk) - 1; i >= 0; i-- {
			pos := start + int64(i)
			if chunk[i] != '\n' || pos == size-1 {
				continue // the file's last newline ends the last line
			}
			if seen++; seen == n {
				return pos + 1, nil
			}
		}
		end = start
	}
	return 0, nil
}
