package api

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestDecodeBodyReusesNothingItKept: answers are read into recycled
// buffers, so what one decode returned must not change when the next
// answer is read; an answer past the pooled size decodes too, and a cut
// or malformed one is an error that names the request.
func TestDecodeBodyReusesNothingItKept(t *testing.T) {
	answer := func(body string, length int64) *http.Response {
		return &http.Response{
			Body: io.NopCloser(strings.NewReader(body)), ContentLength: length,
			Request: &http.Request{Method: http.MethodPost, URL: &url.URL{Path: "/v1/bundles"}},
		}
	}
	var first, second Bundle
	if err := decodeBody(answer(`{"id":"b-first","pool":"p1"}`, -1), &first); err != nil {
		t.Fatal(err)
	}
	if err := decodeBody(answer(`{"id":"b-other","pool":"p2"}`, 28), &second); err != nil {
		t.Fatal(err)
	}
	if first.ID != "b-first" || first.Pool != "p1" || second.ID != "b-other" {
		t.Fatalf("decoded %q/%q and %q: an earlier answer changed with a later one", first.ID, first.Pool, second.ID)
	}
	big := fmt.Sprintf(`{"id":"b-big","pool":%q}`, strings.Repeat("x", 2*maxPooledAnswer))
	var b Bundle
	if err := decodeBody(answer(big, int64(len(big))), &b); err != nil || b.ID != "b-big" || len(b.Pool) != 2*maxPooledAnswer {
		t.Fatalf("an answer past the pooled size: %v, id %q", err, b.ID)
	}
	for _, bad := range []string{`{"id":"b-cut"`, `{"id":}`, ``} {
		if err := decodeBody(answer(bad, -1), &b); err == nil || !strings.Contains(err.Error(), "POST /v1/bundles") {
			t.Fatalf("answer %q: error %v, want one naming the request", bad, err)
		}
	}
}
