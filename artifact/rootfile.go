package artifact

import (
	"archive/tar"
	"io"
)

// RootFile returns the regular file an archive holds under name at its
// root, as Extract would leave it (the last entry of that name wins); ok
// is false when there is none. The archive is walked with Inspect's checks.
func RootFile(archive []byte, name string) (body []byte, ok bool, err error) {
	err = walk(archive, func(h *tar.Header, entry string, r io.Reader) error {
		if entry != name {
			return nil
		}
		if h.Typeflag != tar.TypeReg {
			body, ok = nil, false // a later link or directory replaces the file
			return nil
		}
		b, err := io.ReadAll(r)
		if err != nil {
			return refuse(CodeInvalidArchive, "read %s: %v", entry, err)
		}
		body, ok = b, true
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return body, ok, nil
}
