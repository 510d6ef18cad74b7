package artifact

import (
	"archive/tar"
	"testing"
)

func TestRootFile(t *testing.T) {
	compose := entry{name: "compose.yaml", body: composeOK}
	cases := []struct {
		name    string
		archive []byte
		want    string
		ok      bool
	}{
		{"absent", tarOf(t, false, compose), "", false},
		{"present, gzipped", tarOf(t, true, compose, entry{name: "./.env", body: "A=1\n"}), "A=1\n", true},
		{"not at the root", tarOf(t, false, compose, entry{name: "sub/.env", body: "A=1\n"}), "", false},
		{"the last entry wins", tarOf(t, false, compose, entry{name: ".env", body: "A=1\n"}, entry{name: ".env", body: "A=2\n"}), "A=2\n", true},
		{"a link is no file", tarOf(t, false, compose, entry{name: "x", body: "A=1\n"}, entry{name: ".env", link: "x", typ: tar.TypeSymlink}), "", false},
	}
	for _, tc := range cases {
		body, ok, err := RootFile(tc.archive, ".env")
		if err != nil || ok != tc.ok || string(body) != tc.want {
			t.Errorf("%s: %q %v %v, want %q %v", tc.name, body, ok, err, tc.want, tc.ok)
		}
	}
	if _, _, err := RootFile([]byte("not a tar"), ".env"); err == nil {
		t.Error("a broken archive read as fine")
	}
}
