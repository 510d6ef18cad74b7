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
// never holds more than one read buffer of the file.
type logReader struct {
	path string // "" : the task keeps no output
	// state says whether the task is still held and may still write.
	state func() (live, held bool)
	every time.Duration // how often a follower looks for more
	w     io.Writer
	flush func()
	off   int64
}

// send writes the last tail lines (all with tail < 0) and, with follow,
// what follows.
func (r *logReader) send(ctx context.Context, tail int, follow bool) error {
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

func (r *logReader) sendTail(tail int) error {
	f, size, err := r.open()
	if err != nil || f == nil {
		return err
	}
	defer f.Close()
	start, err := tailOffset(f, size, tail)
	if err != nil {
		return err
	}
	return r.copyFrom(f, start, size)
}

// sendNew sends what was appended since the last read; a file that shrank
// (rewritten) is sent again from its start.
func (r *logReader) sendNew() error {
	f, size, err := r.open()
	if err != nil || f == nil {
		return err
	}
	defer f.Close()
	if size < r.off {
		r.off = 0
	}
	if size == r.off {
		return nil
	}
	return r.copyFrom(f, r.off, size)
}

// open opens the file; nil when it does not exist (yet).
func (r *logReader) open() (*os.File, int64, error) {
	if r.path == "" {
		return nil, 0, nil
	}
	f, err := os.Open(r.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("open log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, 0, fmt.Errorf("stat log: %w", err)
	}
	return f, st.Size(), nil
}

func (r *logReader) copyFrom(f *os.File, from, to int64) error {
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return fmt.Errorf("seek log: %w", err)
	}
	n, err := io.CopyN(r.w, f, to-from)
	r.off = from + n
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
