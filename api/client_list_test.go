package api

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// TestWalkPages: an iterator follows the tokens, passes the narrowing on
// every page, blocks only on the first, and ends at the first error, which
// it yields.
func TestWalkPages(t *testing.T) {
	var queries []map[string][]string
	s := &script{t: t}
	page := func(body, next string) func(http.ResponseWriter, *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			queries = append(queries, r.URL.Query())
			if next != "" {
				w.Header().Set(HeaderNextToken, next)
			}
			jsonAnswer(http.StatusOK, body, HeaderIndex, "9")(w, r)
		}
	}
	s.answers = []func(http.ResponseWriter, *http.Request){
		page(`[{"id":"a"},{"id":"b"}]`, "t2"), page(`[{"id":"c"}]`, "t3"), page(`[]`, ""),
		page(`[{"id":"x"}]`, "t9"),
		jsonAnswer(http.StatusBadRequest, `{"error":{"code":"badRequest","message":"query parameter next_token is not a token","errors":[],"warnings":[]}}`),
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	c, err := New(srv.URL, WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	q := &QueryOptions{Index: 5, Stale: true}
	for b, err := range c.ListBundles(context.Background(), BundleFilter{State: "placed"}, ListOptions{Filter: "x", PerPage: 2}, q) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, b.ID)
	}
	if !slices.Equal(ids, []string{"a", "b", "c"}) {
		t.Fatalf("walked %v", ids)
	}
	for i, q := range queries {
		if q["filter"][0] != "x" || q["state"][0] != "placed" || q["per_page"][0] != "2" || q["stale"] == nil {
			t.Errorf("page %d lost its narrowing: %v", i, q)
		}
		if _, blocks := q["index"]; blocks != (i == 0) {
			t.Errorf("page %d blocks: %v", i, q)
		}
	}
	if queries[1]["next_token"][0] != "t2" || queries[2]["next_token"][0] != "t3" {
		t.Errorf("tokens not passed back: %v", queries)
	}
	var got []error
	for _, err := range c.ListBundles(context.Background(), BundleFilter{}, ListOptions{}, nil) {
		got = append(got, err)
	}
	if len(got) != 2 || got[0] != nil || !IsCode(got[1], CodeBadRequest) {
		t.Fatalf("walk into an error yielded %v", got)
	}
}

// TestRetryTooMany: a read answered 429 is retried after Retry-After.
func TestRetryTooMany(t *testing.T) {
	s := &script{t: t}
	s.answers = []func(http.ResponseWriter, *http.Request){
		func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"error":{"code":"tooManyRequests","message":"busy","errors":[],"warnings":[]}}`)
		},
		jsonAnswer(http.StatusOK, `[]`),
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.BundlesPage(context.Background(), BundleFilter{}, ListOptions{}, nil); err != nil || s.requests.Load() != 2 {
		t.Fatalf("after a 429: %v, %d requests", err, s.requests.Load())
	}
}
