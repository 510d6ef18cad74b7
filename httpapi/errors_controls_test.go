package httpapi

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode"
)

// TestErrorMessagesEscapeControls: an id with control characters (an ESC
// sequence, a newline) that an error message echoes is written escaped, so
// a CLI that prints the message does not hand the terminal an instruction.
func TestErrorMessagesEscapeControls(t *testing.T) {
	e := badInputEnv(t)
	id := "x\n\x1b[31mred"
	for _, tc := range []struct{ method, path string }{
		{"GET", "/v1/bundles/" + url.PathEscape(id)},
		{"DELETE", "/v1/bundles/" + url.PathEscape(id)},
		{"POST", "/v1/nodes/" + url.PathEscape(id) + "/cordon"},
	} {
		resp, raw := e.do(tc.method, tc.path, nil)
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("%s %s: status %d: %s", tc.method, tc.path, resp.StatusCode, raw)
		}
		msg := errorBody(t, raw).Message
		if strings.ContainsFunc(msg, unicode.IsControl) || !strings.Contains(msg, "31mred") {
			t.Fatalf("%s %s: message %q holds control characters or lost the id", tc.method, tc.path, msg)
		}
	}
	if got := escapeControls("tab\there é \u0085"); got != `tab\u0009here é \u0085` {
		t.Fatalf("escapeControls: %q", got)
	}
}
