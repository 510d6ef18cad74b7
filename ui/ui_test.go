package ui

import (
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/amserver/amserver/api"
)

func get(t *testing.T, h http.Handler, method, path string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequestWithContext(t.Context(), method, path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestHandler(t *testing.T) {
	h := Handler()
	for _, tc := range []struct {
		method, path string
		status       int
		contentType  string
		contains     string
	}{
		{"GET", "/", 200, "text/html; charset=utf-8", `<script type="module" src="main.js">`},
		{"GET", "/index.html", 200, "text/html; charset=utf-8", "<title>amserver</title>"},
		{"GET", "/app.js", 200, "text/javascript; charset=utf-8", "export async function api("},
		{"GET", "/main.js", 200, "text/javascript; charset=utf-8", "import"},
		{"GET", "/app.css", 200, "text/css; charset=utf-8", ":root"},
		{"GET", "/favicon.svg", 200, "image/svg+xml", "<svg"},
		{"HEAD", "/app.js", 200, "text/javascript; charset=utf-8", ""},
		{"GET", "/nope.js", 404, "application/json", `"code":"notFound"`},
		{"GET", "/static/app.js", 404, "application/json", `"code":"notFound"`},
		{"GET", "/../ui.go", 404, "application/json", `"code":"notFound"`},
		{"POST", "/", 405, "application/json", `"code":"badRequest"`},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			rec := get(t, h, tc.method, tc.path)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d", rec.Code, tc.status)
			}
			if ct := rec.Header().Get("Content-Type"); ct != tc.contentType {
				t.Errorf("Content-Type %q, want %q", ct, tc.contentType)
			}
			if csp := rec.Header().Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'self'") {
				t.Errorf("Content-Security-Policy %q", csp)
			}
			if rec.Header().Get("X-Content-Type-Options") != "nosniff" {
				t.Error("no X-Content-Type-Options: nosniff")
			}
			if !strings.Contains(rec.Body.String(), tc.contains) {
				t.Errorf("body does not contain %q:\n%.300s", tc.contains, rec.Body.String())
			}
			if tc.method == "HEAD" && rec.Body.Len() != 0 {
				t.Error("HEAD answered with a body")
			}
			if tc.status == 200 && rec.Header().Get("Cache-Control") != "no-cache" {
				t.Errorf("Cache-Control %q, want no-cache", rec.Header().Get("Cache-Control"))
			}
			if tc.status >= 400 {
				var body api.ErrorBody
				if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error == nil || body.Error.Message == "" {
					t.Errorf("error body %q is not the API's error shape: %v", rec.Body.String(), err)
				}
			}
		})
	}
}

// A client that has the current file revalidates without downloading it.
func TestHandlerETag(t *testing.T) {
	h := Handler()
	first := get(t, h, "GET", "/app.js")
	etag := first.Header().Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	if rec := get(t, h, "GET", "/app.js", "If-None-Match", etag); rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
		t.Fatalf("revalidation = %d with %d bytes, want 304 and none", rec.Code, rec.Body.Len())
	}
	if rec := get(t, h, "GET", "/app.js", "If-None-Match", `"stale"`); rec.Code != http.StatusOK {
		t.Fatalf("stale ETag = %d, want 200", rec.Code)
	}
}

func TestLoadRefusesBadTrees(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"no index":          {"static/app.js": {Data: []byte("x")}},
		"unknown extension": {"static/index.html": {Data: []byte("x")}, "static/data.bin": {Data: []byte("x")}},
		"no static dir":     {"index.html": {Data: []byte("x")}},
	} {
		if _, err := load(fsys); err == nil {
			t.Errorf("%s: load succeeded", name)
		}
	}
}

var (
	// What pages and scripts reference: src/href attributes and ES imports.
	refPattern = regexp.MustCompile(`(?:src|href)="([^"#]+)"|from '\./([^']+)'`)
	// Ways to turn a string into markup: server data must never reach them.
	htmlSinks = regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function`)
	// Anything fetched from another origin breaks the CSP and air-gapped use.
	remote = regexp.MustCompile(`(?:src|href)="(?:https?:)?//|url\(\s*['"]?(?:https?:)?//|@import`)
)

// Every file a page or script references exists, no script uses an HTML
// sink, and nothing is fetched from another origin.
func TestStaticFilesSelfContained(t *testing.T) {
	root, err := fs.Sub(files, "static")
	if err != nil {
		t.Fatal(err)
	}
	assets, err := load(files)
	if err != nil {
		t.Fatal(err)
	}
	err = fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		text := string(raw)
		for _, m := range refPattern.FindAllStringSubmatch(text, -1) {
			ref := m[1] + m[2]
			if _, ok := assets["/"+ref]; !ok && !strings.Contains(ref, "://") {
				t.Errorf("%s references %q, which is not embedded", p, ref)
			}
		}
		if strings.HasSuffix(p, ".js") && htmlSinks.MatchString(text) {
			t.Errorf("%s uses an HTML sink (%s); build DOM nodes with textContent", p, htmlSinks.FindString(text))
		}
		if remote.MatchString(text) {
			t.Errorf("%s fetches from another origin: %s", p, remote.FindString(text))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
