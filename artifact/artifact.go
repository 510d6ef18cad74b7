// Package artifact owns templates as files: checking an uploaded archive
// (tar or tar.gz) before the cluster keeps it, deriving its runtime from
// its content, and unpacking it safely on a worker (DESIGN §2.3a). The same
// checks run on both sides, so a worker never unpacks what a server would
// have refused. It is pure: it reads bytes and writes only under the
// directory it is given.
package artifact

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Limits on one template (DESIGN §2.3a).
const (
	MaxArchive  = 4 << 20  // bytes uploaded
	MaxEntries  = 1000     // tar entries
	MaxUnpacked = 16 << 20 // bytes of all files unpacked
)

// Runtimes a template's content implies.
const (
	RuntimeCompose = "compose"
	RuntimeWasm    = "wasm"
)

// composeFiles are the root files that make a template a compose stack.
var composeFiles = []string{"compose.yaml", "compose.yml", "docker-compose.yml"}

// wasmModule is the root file that makes a template a WebAssembly module.
const wasmModule = "main.wasm"

// Error is a refused archive; Code is the API's error code for it.
type Error struct {
	Code string
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// The codes of refused archives.
const (
	CodeTooLarge        = "templateTooLarge"
	CodeInvalidArchive  = "invalidArchive"
	CodeUnsafePath      = "unsafeArchivePath"
	CodeNoRuntime       = "templateRuntimeUnknown"
	CodeAmbiguous       = "templateRuntimeAmbiguous"
	CodeInvalidCompose  = "invalidComposeFile"
	CodeDigestMismatch  = "templateDigestMismatch"
	CodeInvalidTemplate = "invalidTemplateName"
)

func refuse(code, format string, args ...any) error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Info is what an archive holds.
type Info struct {
	Digest  string // "sha256:<hex>" of the archive's bytes
	Runtime string
	Files   int
	Size    int64 // the archive's size in bytes
}

// Digest names bytes the way the cluster does: "sha256:<hex>".
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Inspect checks an archive and says what it holds: every path relative
// and inside the tree, no device, fifo or link leaving it, at most
// MaxEntries entries and MaxUnpacked bytes, exactly one runtime at the
// root, and a compose file that parses.
func Inspect(archive []byte) (Info, error) {
	info := Info{Digest: Digest(archive), Size: int64(len(archive))}
	var compose []byte
	var hasWasm, hasCompose bool
	err := walk(archive, func(h *tar.Header, name string, r io.Reader) error {
		if h.Typeflag != tar.TypeReg {
			return nil
		}
		info.Files++
		switch {
		case name == wasmModule:
			hasWasm = true
		case isComposeFile(name):
			if hasCompose {
				return refuse(CodeAmbiguous, "the template has more than one compose file at its root")
			}
			hasCompose = true
			var err error
			if compose, err = io.ReadAll(r); err != nil {
				return refuse(CodeInvalidArchive, "read %s: %v", name, err)
			}
		}
		return nil
	})
	if err != nil {
		return Info{}, err
	}
	switch {
	case hasWasm && hasCompose:
		return Info{}, refuse(CodeAmbiguous, "the template has both a compose file and %s at its root: it must be one or the other", wasmModule)
	case hasCompose:
		if err := checkCompose(compose); err != nil {
			return Info{}, err
		}
		info.Runtime = RuntimeCompose
	case hasWasm:
		info.Runtime = RuntimeWasm
	default:
		return Info{}, refuse(CodeNoRuntime, "the template has neither a compose file (%s) nor %s at its root",
			strings.Join(composeFiles, ", "), wasmModule)
	}
	return info, nil
}

func isComposeFile(name string) bool {
	for _, f := range composeFiles {
		if name == f {
			return true
		}
	}
	return false
}

// checkCompose requires a YAML mapping with a services mapping in it. It
// decodes into any first: a list or a scalar is YAML, and must be told
// apart from text that does not parse.
func checkCompose(raw []byte) error {
	var top any
	if err := yaml.Unmarshal(raw, &top); err != nil {
		return refuse(CodeInvalidCompose, "the compose file is not YAML: %v", err)
	}
	doc, ok := top.(map[string]any)
	if !ok && top != nil {
		return refuse(CodeInvalidCompose, "the compose file holds a YAML %s, not a mapping with services: at its top", yamlKind(top))
	}
	svc, isMap := doc["services"].(map[string]any)
	switch {
	case doc["services"] != nil && !isMap:
		return refuse(CodeInvalidCompose, "the compose file's services is a YAML %s, not a mapping of service names", yamlKind(doc["services"]))
	case len(svc) == 0:
		return refuse(CodeInvalidCompose, "the compose file names no services")
	}
	return checkServices(svc)
}

// checkServices requires every service to be a mapping that names an image
// (or extends one that may): workers neither build nor pull, and compose
// names a build-only service's image after the project, which the worker
// chooses, so no one could build it beforehand and it would never deploy.
func checkServices(svc map[string]any) error {
	for _, name := range slices.Sorted(maps.Keys(svc)) {
		s, ok := svc[name].(map[string]any)
		switch {
		case !ok:
			return refuse(CodeInvalidCompose, "service %s is a YAML %s, not a mapping", name, yamlKind(svc[name]))
		case s["image"] == nil && s["extends"] == nil:
			return refuse(CodeInvalidCompose, "service %s names no image: amserver neither builds nor pulls, so every service runs an image built on each node beforehand", name)
		}
	}
	return nil
}

// yamlKind names what a decoded YAML value is, for messages.
func yamlKind(v any) string {
	switch v.(type) {
	case []any:
		return "list"
	case map[string]any:
		return "mapping"
	}
	return "scalar"
}

// walk reads every entry of the archive (gzip or not), refusing what is
// unsafe or too large, and calls fn with each entry's cleaned name.
func walk(archive []byte, fn func(h *tar.Header, name string, r io.Reader) error) error {
	if len(archive) > MaxArchive {
		return refuse(CodeTooLarge, "the archive is %d bytes, more than the %d allowed", len(archive), MaxArchive)
	}
	var r io.Reader = bytes.NewReader(archive)
	if len(archive) >= 2 && archive[0] == 0x1f && archive[1] == 0x8b {
		gz, err := gzip.NewReader(r)
		if err != nil {
			return refuse(CodeInvalidArchive, "not a gzip archive: %v", err)
		}
		defer func() { _ = gz.Close() }()
		r = gz
	}
	tr := tar.NewReader(r)
	var entries int
	var unpacked int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return refuse(CodeInvalidArchive, "not a tar archive: %v", err)
		}
		if entries++; entries > MaxEntries {
			return refuse(CodeTooLarge, "the archive has more than %d entries", MaxEntries)
		}
		name, err := checkEntry(h)
		if err != nil {
			return err
		}
		if unpacked += max(h.Size, 0); unpacked > MaxUnpacked {
			return refuse(CodeTooLarge, "the archive unpacks to more than %d bytes", MaxUnpacked)
		}
		body := io.LimitReader(tr, MaxUnpacked)
		if err := fn(h, name, body); err != nil {
			return err
		}
	}
	if entries == 0 {
		return refuse(CodeInvalidArchive, "the archive is empty")
	}
	return nil
}

// checkEntry returns the entry's cleaned relative name, or why it is
// refused: absolute paths, "..", links that leave the tree, devices, fifos
// and other special files.
func checkEntry(h *tar.Header) (string, error) {
	raw := h.Name
	if strings.HasPrefix(raw, "/") || strings.Contains(raw, "\\") {
		return "", refuse(CodeUnsafePath, "%q: only relative paths are allowed", raw)
	}
	name := path.Clean(raw)
	if name == ".." || strings.HasPrefix(name, "../") || strings.Contains(raw, "/../") || strings.HasSuffix(raw, "/..") {
		return "", refuse(CodeUnsafePath, "%q leaves the template's tree", raw)
	}
	switch h.Typeflag {
	case tar.TypeReg, tar.TypeDir:
	case tar.TypeSymlink, tar.TypeLink:
		target := h.Linkname
		if h.Typeflag == tar.TypeSymlink && !path.IsAbs(target) {
			target = path.Join(path.Dir(name), target)
		}
		target = path.Clean(target)
		if path.IsAbs(target) || target == ".." || strings.HasPrefix(target, "../") {
			return "", refuse(CodeUnsafePath, "%q links to %q, outside the template's tree", raw, h.Linkname)
		}
	default:
		return "", refuse(CodeUnsafePath, "%q is a device, fifo or other special file", raw)
	}
	return name, nil
}
