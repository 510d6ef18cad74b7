package artifact

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type entry struct {
	name, body, link string
	typ              byte
}

func tarOf(t *testing.T, gz bool, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w *tar.Writer
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(&buf)
		w = tar.NewWriter(zw)
	} else {
		w = tar.NewWriter(&buf)
	}
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		h := &tar.Header{Name: e.name, Typeflag: typ, Mode: 0o644, Linkname: e.link}
		if typ == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := w.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			if _, err := w.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

const composeOK = "services:\n  web:\n    image: amserver-test:dev\n"

func TestInspect(t *testing.T) {
	many := []entry{{name: "compose.yaml", body: composeOK}}
	for i := range MaxEntries {
		many = append(many, entry{name: "f/" + strings.Repeat("x", 3) + string(rune('a'+i%26)) + "-" + itoa(i)})
	}
	cases := []struct {
		name    string
		archive []byte
		runtime string
		code    string
	}{
		{"compose stack", tarOf(t, false, entry{name: "compose.yaml", body: composeOK}, entry{name: "app/config.json", body: "{}"}), RuntimeCompose, ""},
		{"docker-compose.yml gzipped", tarOf(t, true, entry{name: "./docker-compose.yml", body: composeOK}), RuntimeCompose, ""},
		{"wasm module", tarOf(t, false, entry{name: "main.wasm", body: "\x00asm"}), RuntimeWasm, ""},
		{"link inside the tree", tarOf(t, false, entry{name: "main.wasm", body: "x"}, entry{name: "alias.wasm", link: "main.wasm", typ: tar.TypeSymlink}), RuntimeWasm, ""},
		{"parent path", tarOf(t, false, entry{name: "main.wasm", body: "x"}, entry{name: "../x", body: "x"}), "", CodeUnsafePath},
		{"parent inside", tarOf(t, false, entry{name: "main.wasm", body: "x"}, entry{name: "a/../../x", body: "x"}), "", CodeUnsafePath},
		{"absolute path", tarOf(t, false, entry{name: "/etc/passwd", body: "x"}), "", CodeUnsafePath},
		{"symlink to /etc", tarOf(t, false, entry{name: "main.wasm", body: "x"}, entry{name: "etc", link: "/etc", typ: tar.TypeSymlink}), "", CodeUnsafePath},
		{"symlink climbing out", tarOf(t, false, entry{name: "main.wasm", body: "x"}, entry{name: "a/up", link: "../../x", typ: tar.TypeSymlink}), "", CodeUnsafePath},
		{"device", tarOf(t, false, entry{name: "main.wasm", body: "x"}, entry{name: "dev", typ: tar.TypeChar}), "", CodeUnsafePath},
		{"fifo", tarOf(t, false, entry{name: "main.wasm", body: "x"}, entry{name: "pipe", typ: tar.TypeFifo}), "", CodeUnsafePath},
		{"both runtimes", tarOf(t, false, entry{name: "compose.yml", body: composeOK}, entry{name: "main.wasm", body: "x"}), "", CodeAmbiguous},
		{"neither runtime", tarOf(t, false, entry{name: "README", body: "x"}), "", CodeNoRuntime},
		{"wasm not at the root", tarOf(t, false, entry{name: "sub/main.wasm", body: "x"}), "", CodeNoRuntime},
		{"compose not YAML", tarOf(t, false, entry{name: "compose.yaml", body: "services: [\n"}), "", CodeInvalidCompose},
		{"compose with an anchored image", tarOf(t, false, entry{name: "compose.yaml", body: "x-base: &base\n  image: x\nservices:\n  a:\n    <<: *base\n"}), RuntimeCompose, ""},
		{"compose service extending another", tarOf(t, false, entry{name: "compose.yaml", body: "services:\n  a:\n    extends: {file: base.yaml, service: web}\n"}), RuntimeCompose, ""},
		{"compose without services", tarOf(t, false, entry{name: "compose.yaml", body: "version: '3'\n"}), "", CodeInvalidCompose},
		{"not a tar", []byte("plain text, not an archive at all......................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................................."), "", CodeInvalidArchive},
		{"empty tar", tarOf(t, false), "", CodeInvalidArchive},
		{"too many entries", tarOf(t, false, many...), "", CodeTooLarge},
		{"over 4 MiB", make([]byte, MaxArchive+1), "", CodeTooLarge},
		{"tar bomb", tarOf(t, true, entry{name: "main.wasm", body: "x"}, entry{name: "bomb", body: strings.Repeat("0", MaxUnpacked)}), "", CodeTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			info, err := Inspect(tc.archive)
			if tc.code != "" {
				var ae *Error
				if !errors.As(err, &ae) || ae.Code != tc.code {
					t.Fatalf("err %v, want code %s", err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if info.Runtime != tc.runtime || info.Digest != Digest(tc.archive) || info.Size != int64(len(tc.archive)) || info.Files == 0 {
				t.Fatalf("info %+v, want runtime %s", info, tc.runtime)
			}
		})
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// TestExtract: files land under the directory, links stay inside it, and
// an archive with another digest than asked for is refused untouched.
func TestExtract(t *testing.T) {
	archive := tarOf(t, true,
		entry{name: "compose.yaml", body: composeOK},
		entry{name: "app/", typ: tar.TypeDir},
		entry{name: "app/config.json", body: `{"a":1}`},
		entry{name: "app/current", link: "config.json", typ: tar.TypeSymlink},
	)
	dir := filepath.Join(t.TempDir(), "a1")
	if err := Extract(archive, Digest(archive), dir); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "app", "current"))
	if err != nil || string(got) != `{"a":1}` {
		t.Fatalf("through the link: %q %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "compose.yaml")); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "a2")
	var ae *Error
	if err := Extract(archive, "sha256:"+strings.Repeat("0", 64), other); !errors.As(err, &ae) || ae.Code != CodeDigestMismatch {
		t.Fatalf("wrong digest: %v", err)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Fatal("a refused archive left a directory behind")
	}
	bad := tarOf(t, false, entry{name: "main.wasm", body: "x"}, entry{name: "../escape", body: "x"})
	if err := Extract(bad, "", filepath.Join(t.TempDir(), "a3")); !errors.As(err, &ae) || ae.Code != CodeUnsafePath {
		t.Fatalf("unsafe archive: %v", err)
	}
}

// TestComposeFileMessages: a compose file that parses but has the wrong
// shape is told apart from one that does not parse.
func TestComposeFileMessages(t *testing.T) {
	cases := []struct{ body, want string }{
		{"services: [\n", "is not YAML"},
		{"- a\n- b\n", "holds a YAML list, not a mapping"},
		{"just text\n", "holds a YAML scalar, not a mapping"},
		{"services: [a, b]\n", "services is a YAML list, not a mapping of service names"},
		{"services:\n", "names no services"},
		{"", "names no services"},
		{"services:\n  a:\n    build: .\n", "service a names no image"},
		{"services:\n  a:\n    image: x\n  b:\n", "service b is a YAML scalar, not a mapping"},
	}
	for _, tc := range cases {
		_, err := Inspect(tarOf(t, false, entry{name: "compose.yaml", body: tc.body}))
		var ae *Error
		if !errors.As(err, &ae) || ae.Code != CodeInvalidCompose || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("compose %q: %v, want %s saying %q", tc.body, err, CodeInvalidCompose, tc.want)
		}
	}
}
