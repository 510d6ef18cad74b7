package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/amserver/amserver/api"
)

// TestStaleReadsWarn: a --stale read answered by a server that knows no
// leader, or has not heard from it for a while, says so once on stderr,
// over every page of a list; one from a server in touch with its leader,
// or a read without --stale, says nothing.
func TestStaleReadsWarn(t *testing.T) {
	for _, tc := range []struct {
		name, index, known, contactMs string
		stale                         bool
		warn                          string
	}{
		{"no leader", "42", "false", "0", true, "knows no leader: this may be out of date (state index 42)"},
		// The header's 1 is a state index of 0, which `status` prints as
		// such: the warning says the state is empty, not "index 1".
		{"no leader, empty state", "1", "false", "0", true, "knows no leader: this may be out of date (" + emptyState + ")"},
		{"leader silent for 30s", "42", "true", "30000", true, "last heard from its leader 30s ago"},
		{"leader in touch", "42", "true", "120", true, ""},
		{"not a stale read", "42", "false", "0", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			f.on("GET /v1/bundles", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set(api.HeaderIndex, tc.index)
				w.Header().Set(api.HeaderKnownLeader, tc.known)
				w.Header().Set(api.HeaderLastContact, tc.contactMs)
				if r.URL.Query().Get("next_token") == "" {
					w.Header().Set(api.HeaderNextToken, "p2")
				}
				_, _ = w.Write([]byte("[]"))
			})
			args := []string{"bundle", "list"}
			if tc.stale {
				args = append(args, "--stale")
			}
			r := runCLI(t, f.srv.URL, "", args...)
			if r.code != exitOK {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if n := strings.Count(r.stderr, "warning:"); tc.warn == "" && n != 0 || tc.warn != "" && (n != 1 || !strings.Contains(r.stderr, tc.warn)) {
				t.Fatalf("stderr %q; want %s", r.stderr, map[bool]string{true: "no warning", false: "one warning saying " + tc.warn}[tc.warn == ""])
			}
		})
	}
}
