// Package ui is amserver's web UI: static HTML, CSS and plain JavaScript,
// embedded in the binary and served as is. The pages read the JSON API of
// the server that serves them (same origin), so the UI needs no build step,
// no Node toolchain and nothing from the network.
package ui

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strconv"

	"github.com/amserver/amserver/api"
)

//go:embed static
var files embed.FS

// ContentSecurityPolicy allows nothing but this origin: no inline script or
// style, no CDN, no framing. Every server-provided string reaches the page
// through textContent, and this is the second line of defence.
const ContentSecurityPolicy = "default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// contentTypes covers every extension under static/; a file of any other
// kind is refused at startup rather than sniffed by the browser.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
}

type asset struct {
	body        []byte
	contentType string
	etag        string
}

// Handler serves the UI rooted at "/": "/" is the single page, "/app.js"
// and the like its assets. Mount it under a prefix with http.StripPrefix.
// Unknown paths get 404: views are chosen by the URL fragment, so the
// server never needs a fallback page.
func Handler() http.Handler {
	assets, err := load(files)
	if err != nil {
		panic(err) // the embedded files are fixed at build time; TestHandler covers them
	}
	return handler{assets: assets}
}

func load(fsys fs.FS) (map[string]asset, error) {
	root, err := fs.Sub(fsys, "static")
	if err != nil {
		return nil, fmt.Errorf("ui: static dir: %w", err)
	}
	out := map[string]asset{}
	err = fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ct, ok := contentTypes[path.Ext(p)]
		if !ok {
			return fmt.Errorf("ui: %s: no content type for its extension", p)
		}
		body, err := fs.ReadFile(root, p)
		if err != nil {
			return fmt.Errorf("ui: read %s: %w", p, err)
		}
		sum := sha256.Sum256(body)
		out["/"+p] = asset{body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if _, ok := out["/index.html"]; !ok {
		return nil, fmt.Errorf("ui: static/index.html is missing")
	}
	return out, nil
}

type handler struct{ assets map[string]asset }

func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", ContentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		hd.Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, api.CodeBadRequest, r.Method+" is not allowed on the UI's files")
		return
	}
	p := r.URL.Path
	if p == "" || p == "/" {
		p = "/index.html"
	}
	a, ok := h.assets[p]
	if !ok {
		writeError(w, http.StatusNotFound, api.CodeNotFound, "the UI has no file "+strconv.Quote(p))
		return
	}
	hd.Set("Content-Type", a.contentType)
	// Revalidate every time: an upgraded server must never run stale
	// scripts against its new API; the ETag makes revalidation cheap.
	hd.Set("Cache-Control", "no-cache")
	hd.Set("ETag", a.etag)
	if match := r.Header.Get("If-None-Match"); match != "" && match == a.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if r.Method == http.MethodHead {
		hd.Set("Content-Length", strconv.Itoa(len(a.body)))
		return
	}
	_, _ = w.Write(a.body)
}

// writeError answers in the API's error shape, so a client sees one kind of
// error body from every path of the server.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	body, _ := json.Marshal(api.ErrorBody{Error: &api.Error{Code: code, Message: msg, Errors: []api.Finding{}, Warnings: []api.Finding{}}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
