package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/amserver/amserver/api"
)

// templateArchive reads what `template push` sends: a directory, tarred and
// gzipped here, or an archive file (tar or tar.gz; "-" for stdin) sent as
// it is. The server checks the archive either way.
func (a *app) templateArchive(path string) ([]byte, error) {
	if path != "-" {
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			return tarDir(path)
		}
	}
	data, err := a.readAll(path)
	if err != nil {
		return nil, err
	}
	if len(data) > api.MaxTemplateArchive {
		return nil, fmt.Errorf("%d bytes, more than the %d a template may have", len(data), api.MaxTemplateArchive)
	}
	return data, nil
}

// tarDir packs dir as a tar.gz whose bytes depend only on the tree's names,
// contents, links and executable bits: entries in lexical order, times,
// owners and the gzip header zeroed. Pushing an unchanged directory again
// therefore sends the same digest, which the server treats as a no-op.
func tarDir(dir string) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		return addEntry(tw, path, filepath.ToSlash(rel), d)
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// addEntry writes one file, directory or symlink; anything else (devices,
// sockets) has no place in a template.
func addEntry(tw *tar.Writer, path, name string, d fs.DirEntry) error {
	h := &tar.Header{Name: name, Mode: 0o644, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
	info, err := d.Info()
	if err != nil {
		return err
	}
	switch mode := info.Mode(); {
	case mode.IsDir():
		h.Typeflag, h.Name, h.Mode = tar.TypeDir, name+"/", 0o755
	case mode&fs.ModeSymlink != 0:
		if h.Linkname, err = os.Readlink(path); err != nil {
			return err
		}
		h.Typeflag, h.Mode = tar.TypeSymlink, 0o777
	case mode.IsRegular():
		h.Typeflag, h.Size = tar.TypeReg, info.Size()
		if mode&0o111 != 0 {
			h.Mode = 0o755
		}
	default:
		return fmt.Errorf("%s is neither a file, a directory nor a symlink", name)
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if h.Typeflag != tar.TypeReg {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.CopyN(tw, f, h.Size); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
