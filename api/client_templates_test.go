package api

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestTemplateArchive: the client asks for one digest of one template and
// hands back the raw bytes; a 404 is an *Error with its code.
func TestTemplateArchive(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/templates/web/archive" && r.URL.Query().Get("digest") == "sha256:ab" {
			w.Header().Set("Content-Type", "application/octet-stream")
			_, _ = w.Write([]byte("tar bytes"))
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":{"code":"notFound","message":"no such template"}}`))
	}))
	defer srv.Close()
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rc, err := c.TemplateArchive(ctx, "web", "sha256:ab")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	_ = rc.Close()
	if string(b) != "tar bytes" {
		t.Fatalf("body %q", b)
	}
	if _, err := c.TemplateArchive(ctx, "web", "sha256:cd"); !IsCode(err, CodeNotFound) {
		t.Fatalf("missing digest: %v", err)
	}
}
