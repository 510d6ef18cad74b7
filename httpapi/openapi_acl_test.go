package httpapi

import (
	"strings"
	"testing"
)

// aclDoc is how docs/openapi.yaml names a route's ACL rule in
// x-amserver-acl.
func aclDoc(r aclRule) string {
	kind := map[access]string{
		accessPublic: "none", accessAnyToken: "any token", accessRead: "read",
		accessWrite: "write", accessManagement: "management",
	}[r.need]
	switch {
	case r.ownNode:
		return kind + " or the node's own worker token"
	case r.anyWorker:
		return kind + " or any worker token"
	}
	return kind
}

// TestOpenAPIDocumentsACLs: every operation says which token it needs, and
// says what the router enforces.
func TestOpenAPIDocumentsACLs(t *testing.T) {
	s := New(Config{Backend: newTestBackend("s1"), Metrics: testMetricsHandler(), UI: testUI})
	ops := openAPI(t).ops(t)
	for key, rule := range s.aclRules {
		method, path, _ := strings.Cut(key, " ")
		doc := method + " " + echoParam.ReplaceAllString(path, "{$1}")
		o, ok := ops[doc]
		if !ok {
			continue // route parity is TestOpenAPIRoutesMatchRouter's to report
		}
		if want := aclDoc(rule); o.ACL != want {
			t.Errorf("%s: x-amserver-acl %q, the router enforces %q", doc, o.ACL, want)
		}
	}
}
