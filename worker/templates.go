package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/amserver/amserver/artifact"
)

// TemplateSource fetches a template's archive by digest: the worker (over
// the API, trying each server) or, in tests, an *api.Client.
type TemplateSource interface {
	TemplateArchive(ctx context.Context, name, digest string) (io.ReadCloser, error)
}

// permanentError is a deploy failure that retrying cannot fix (a bad ref,
// an archive the checks refuse, a parameter that cannot be passed): the
// driver waits for the launch to change instead.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

func permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

func isPermanent(err error) bool {
	var p *permanentError
	var a *artifact.Error
	return errors.As(err, &p) || errors.As(err, &a)
}

var digestForm = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// parseRef splits a resolved template ref, "name@sha256:<hex>". The
// servers resolve a bare name at create, so a worker only ever runs a
// digest it can check.
func parseRef(ref string) (name, digest string, err error) {
	i := strings.LastIndex(ref, "@")
	if i <= 0 {
		return "", "", permanent(fmt.Errorf("template ref %q names no digest (the servers resolve refs when the bundle is created)", ref))
	}
	name, digest = ref[:i], ref[i+1:]
	if !digestForm.MatchString(digest) {
		return "", "", permanent(fmt.Errorf("template ref %q: the digest is not sha256:<64 hex>", ref))
	}
	return name, digest, nil
}

// templateCache keeps archives by digest under dir. An archive is fetched
// once, checked against its digest before it is kept, and never fetched
// again while its file is intact.
type templateCache struct {
	dir string

	mu      sync.Mutex
	src     TemplateSource
	flights map[string]*flight // fetches under way, by digest
}

type flight struct {
	done chan struct{}
	data []byte
	err  error
}

func newTemplateCache(dir string, src TemplateSource) *templateCache {
	return &templateCache{dir: dir, src: src, flights: map[string]*flight{}}
}

func (c *templateCache) path(digest string) string {
	return filepath.Join(c.dir, strings.TrimPrefix(digest, "sha256:")+".tar")
}

// get returns the archive of ref's digest, from disk or fetched. Callers
// asking for the same digest at once share one fetch.
func (c *templateCache) get(ctx context.Context, ref string) ([]byte, string, error) {
	name, digest, err := parseRef(ref)
	if err != nil {
		return nil, "", err
	}
	if b, err := os.ReadFile(c.path(digest)); err == nil && artifact.Digest(b) == digest {
		return b, digest, nil
	}
	c.mu.Lock()
	f := c.flights[digest]
	if f == nil {
		f = &flight{done: make(chan struct{})}
		c.flights[digest] = f
		go c.fetch(name, digest, f)
	}
	c.mu.Unlock()
	select {
	case <-f.done:
		return f.data, digest, f.err
	case <-ctx.Done():
		return nil, "", ctx.Err()
	}
}

// fetch downloads, checks and stores one archive. It runs on its own
// context so that a caller giving up does not fail the others waiting.
func (c *templateCache) fetch(name, digest string, f *flight) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f.data, f.err = c.download(ctx, name, digest)
	c.mu.Lock()
	delete(c.flights, digest)
	c.mu.Unlock()
	close(f.done)
}

func (c *templateCache) download(ctx context.Context, name, digest string) ([]byte, error) {
	c.mu.Lock()
	src := c.src
	c.mu.Unlock()
	if src == nil {
		return nil, errors.New("no template source: this worker cannot fetch templates")
	}
	rc, err := src.TemplateArchive(ctx, name, digest)
	if err != nil {
		return nil, fmt.Errorf("fetch template %s: %w", name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, artifact.MaxArchive+1))
	if err != nil {
		return nil, fmt.Errorf("fetch template %s: %w", name, err)
	}
	if len(b) > artifact.MaxArchive {
		return nil, fmt.Errorf("fetch template %s: the archive is over %d bytes", name, artifact.MaxArchive)
	}
	if got := artifact.Digest(b); got != digest {
		return nil, fmt.Errorf("fetch template %s: the bytes hash to %s, not %s", name, got, digest)
	}
	if err := os.MkdirAll(c.dir, 0o750); err != nil {
		return nil, fmt.Errorf("template cache: %w", err)
	}
	tmp, err := os.CreateTemp(c.dir, ".fetch-*")
	if err != nil {
		return nil, fmt.Errorf("template cache: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		_ = tmp.Close()
		return nil, fmt.Errorf("template cache: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("template cache: %w", err)
	}
	if err := os.Rename(tmp.Name(), c.path(digest)); err != nil {
		return nil, fmt.Errorf("template cache: %w", err)
	}
	return b, nil
}

// stackDir is where a template is unpacked in an assignment's directory.
const stackDir = "stack"

// materialize unpacks the archive into dir/stack unless that already holds
// this digest, after checking that it is a template of the runtime the
// assignment expects. It reports whether the files changed.
func materialize(archive []byte, digest, dir, runtime string) (bool, error) {
	stack := filepath.Join(dir, stackDir)
	marker := filepath.Join(dir, "stack.digest")
	if b, err := os.ReadFile(marker); err == nil && string(b) == digest {
		if _, err := os.Stat(stack); err == nil {
			return false, nil
		}
	}
	info, err := artifact.Inspect(archive)
	if err != nil {
		return false, permanent(err)
	}
	if info.Runtime != runtime {
		return false, permanent(fmt.Errorf("the template is a %s template, but the assignment runs %s", info.Runtime, runtime))
	}
	tmp := stack + ".new"
	if err := os.RemoveAll(tmp); err != nil {
		return false, fmt.Errorf("unpack template: %w", err)
	}
	if err := artifact.Extract(archive, digest, tmp); err != nil {
		return false, permanent(err)
	}
	if err := os.RemoveAll(stack); err != nil {
		return false, fmt.Errorf("unpack template: %w", err)
	}
	if err := os.Rename(tmp, stack); err != nil {
		return false, fmt.Errorf("unpack template: %w", err)
	}
	if err := os.WriteFile(marker, []byte(digest), 0o640); err != nil {
		return false, fmt.Errorf("unpack template: %w", err)
	}
	return true, nil
}

// writeFresh replaces whatever is at path (a file, a link, a directory
// the archive put there) with a new file: nothing is written through a
// link a template planted.
func writeFresh(path string, body []byte, perm os.FileMode) error {
	if err := os.RemoveAll(path); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
