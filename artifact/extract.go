package artifact

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Extract unpacks an archive into dir (created if missing) after the same
// checks as Inspect. want, when not empty, is the digest the archive must
// have: a worker unpacks only the bytes the bundle was created with.
// Links are recreated only inside dir; files get 0644 or, if executable in
// the archive, 0755; directories 0755.
func Extract(archive []byte, want, dir string) error {
	if want != "" && Digest(archive) != want {
		return refuse(CodeDigestMismatch, "the archive's digest is %s, not %s", Digest(archive), want)
	}
	if _, err := Inspect(archive); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("artifact: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("artifact: %w", err)
	}
	defer func() { _ = root.Close() }()
	return walk(archive, func(h *tar.Header, name string, r io.Reader) error {
		if err := mkParents(root, name); err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if name != "." {
				if err := root.Mkdir(name, 0o755); err != nil && !os.IsExist(err) {
					return fmt.Errorf("artifact: %w", err)
				}
			}
		case tar.TypeReg:
			return writeFile(root, name, h.FileInfo().Mode(), r)
		case tar.TypeSymlink:
			return root.Symlink(h.Linkname, name)
		case tar.TypeLink:
			return root.Link(filepath.Clean(h.Linkname), name)
		}
		return nil
	})
}

// mkParents creates name's parent directories inside root.
func mkParents(root *os.Root, name string) error {
	dir := filepath.Dir(name)
	if dir == "." {
		return nil
	}
	parts := strings.Split(dir, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		if err := root.Mkdir(p, 0o755); err != nil && !os.IsExist(err) {
			return fmt.Errorf("artifact: %w", err)
		}
	}
	return nil
}

func writeFile(root *os.Root, name string, mode os.FileMode, r io.Reader) error {
	perm := os.FileMode(0o644)
	if mode&0o111 != 0 {
		perm = 0o755
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("artifact: %w", err)
	}
	if _, err := io.Copy(f, r); err != nil {
		_ = f.Close()
		return fmt.Errorf("artifact: write %s: %w", name, err)
	}
	return f.Close()
}
