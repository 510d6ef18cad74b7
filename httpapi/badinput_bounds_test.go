package httpapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
)

// boundCases: duplicate keys at any depth, bodies that are not UTF-8, and
// the bounds on what clients set, each answered with its code before
// anything reaches Raft.
func boundCases() []badCase {
	v := validationCase
	dup := func(name, method, path, body string) badCase {
		return badCase{"400 duplicate key " + name, method, path, body, 400, api.CodeDuplicateKey, ""}
	}
	fold := func(name, method, path, body string) badCase {
		return badCase{"400 key in another case " + name, method, path, body, 400, api.CodeBadRequest, ""}
	}
	job := `{"name":"enc","requirements":{"capacity":1}}`
	return []badCase{
		dup("top level", "POST", bundles, `{"pool":"p1","pool":"p2","jobs":[`+job+`]}`),
		dup("in a job", "POST", bundles, `{"pool":"p1","jobs":[{"name":"enc","name":"x"}]}`),
		dup("deep in requirements", "POST", bundles, `{"pool":"p1","jobs":[{"name":"enc","requirements":{"capacity":1,"capacity":2}}]}`),
		dup("in tags", "POST", bundles, `{"pool":"p1","tags":{"team":"a","team":"b"},"jobs":[`+job+`]}`),
		dup("escaped", "POST", bundles, `{"pool":"p1","p\u006fol":"p2","jobs":[`+job+`]}`),
		dup("on validate", "POST", bundles+"/validate", `{"pool":"p1","jobs":[`+job+`],"jobs":[]}`),
		dup("in a node", "PUT", "/v1/nodes/n9", `{"pool":"p1","totalCapacity":4,"labels":{"az":"a","az":"b"}}`),
		dup("in a pool", "PUT", "/v1/pools/p9", `{"kind":"cluster","kind":"elastic"}`),
		// encoding/json matches keys to fields ignoring case: "Pool" would
		// pass for "pool", and beside it silently replace or be replaced.
		fold("alone", "POST", bundles, `{"Pool":"p1","jobs":[`+job+`]}`),
		fold("beside the exact key", "POST", bundles, `{"pool":"p1","POOL":"one","jobs":[`+job+`]}`),
		fold("in a job", "POST", bundles, `{"pool":"p1","jobs":[{"name":"enc","Requirements":{"capacity":1}}]}`),
		fold("in a launch", "POST", bundles, `{"pool":"p1","jobs":[{"name":"enc","launch":{"kind":"legacy","job":{"Driver":"none"}}}]}`),
		fold("on validate", "POST", bundles+"/validate", `{"pool":"p1","jobs":[{"Name":"enc"}]}`),
		fold("in a node", "PUT", "/v1/nodes/n9", `{"pool":"p1","TotalCapacity":4}`),
		fold("in a pool", "PUT", "/v1/pools/p9", `{"Kind":"cluster"}`),
		{"400 not UTF-8", "POST", bundles, "{\"pool\":\"p1\",\"tags\":{\"k\":\"\xff\"},\"jobs\":[" + job + "]}", 400, api.CodeBadRequest, ""},
		v("bidi in a tag", fsm.CodeInvalidText, func(s *api.BundleSpec) { s.Tags = map[string]string{"owner": "evil\u202Egnp.exe"} }),
		v("bidi in a tag key", fsm.CodeInvalidText, func(s *api.BundleSpec) { s.Tags = map[string]string{"a\u2067b": "x"} }),
		v("65 tags", fsm.CodeLimitExceeded, func(s *api.BundleSpec) { s.Tags = tags(65) }),
		v("tag value over 1 KiB", fsm.CodeLimitExceeded, func(s *api.BundleSpec) { s.Tags = map[string]string{"k": strings.Repeat("v", 1025)} }),
		v("65 tolerations", fsm.CodeLimitExceeded, func(s *api.BundleSpec) { s.Jobs[0].Tolerations = strings.Split(strings.Repeat("t,", 64)+"t", ",") }),
		{"422 node with a control character in a label", "PUT", "/v1/nodes/n9", `{"pool":"p1","totalCapacity":4,"labels":{"az":"a\u0007"}}`,
			422, api.CodeValidationFailed, fsm.CodeInvalidText},
		{"422 warm of 10^9", "PUT", "/v1/pools/p9", `{"kind":"elastic","warm":1000000000}`, 422, api.CodeValidationFailed, fsm.CodeLimitExceeded},
		{"422 warm over maxNodes", "PUT", "/v1/pools/p9", `{"kind":"elastic","warm":6,"maxNodes":5}`, 422, api.CodeValidationFailed, fsm.CodeInvalidRequirement},
	}
}

func tags(n int) map[string]string {
	out := map[string]string{}
	for i := range n {
		out[fmt.Sprintf("k%d", i)] = "v"
	}
	return out
}

// TestErrorsClipEchoes: a 10 KB id or value comes back in the error cut to
// at most 128 characters, whichever layer wrote the message.
func TestErrorsClipEchoes(t *testing.T) {
	e := badInputEnv(t)
	long := strings.Repeat("x", 10<<10)
	tagged := bundle(func(s *api.BundleSpec) { s.Tags = map[string]string{long: "v"} })
	for _, tc := range []struct{ method, path, body string }{
		{"GET", bundles + "/" + long, ""},
		{"DELETE", bundles + "/" + long, ""},
		{"GET", "/v1/nodes/" + long, ""},
		{"POST", "/v1/nodes/" + long + "/cordon", ""},
		{"PUT", "/v1/nodes/" + long, `{"pool":"p1","totalCapacity":4}`},
		{"PUT", "/v1/pools/" + long, `{}`},
		{"POST", bundles, bundle(func(s *api.BundleSpec) { s.ID = long })},
		{"POST", bundles, tagged},
		{"POST", bundles, `{"pool":"p1","` + long + `":1,"` + long + `":2}`},
		{"GET", bundles + "?state=" + long, ""},
	} {
		resp, raw := e.do(tc.method, tc.path, []byte(tc.body))
		if resp.StatusCode < 400 {
			t.Fatalf("%s %.40s: status %d", tc.method, tc.path, resp.StatusCode)
		}
		body := errorBody(t, raw)
		texts := []string{body.Message}
		for _, f := range body.Errors {
			texts = append(texts, f.Message)
		}
		for _, s := range texts {
			if strings.Contains(s, strings.Repeat("x", fsm.MaxEcho)) || utf8.RuneCountInString(s) > 4*fsm.MaxEcho {
				t.Fatalf("%s %.40s: %d characters echoed: %.300s", tc.method, tc.path, utf8.RuneCountInString(s), s)
			}
		}
		if !strings.Contains(strings.Join(texts, " "), strings.Repeat("x", 64)) {
			t.Fatalf("%s %.40s: the value is not echoed at all: %s", tc.method, tc.path, raw)
		}
	}
}

// TestScanBodyMatchesTokens: the duplicate-key scan agrees with a walk of
// the decoder's tokens on hand-picked bodies (FuzzScanBody explores more).
func TestScanBodyMatchesTokens(t *testing.T) {
	for _, body := range scanSeeds() {
		if got, want := scanBody([]byte(body)) != nil, tokenDuplicate([]byte(body)); got != want {
			t.Errorf("%s: scan says duplicate=%v, tokens %v", body, got, want)
		}
	}
}

func scanSeeds() []string {
	return []string{
		`{}`, `[]`, `{"a":1,"b":2}`, `{"a":1,"a":2}`, `{"a":{"b":1},"c":{"b":1}}`, `{"a":{"b":1,"b":1}}`,
		`[{"a":1},{"a":1}]`, `[{"a":1,"a":1}]`, `{"a":"}","a":1}`, `{"a":"\"","b":"\\"}`, `{"\"":1,"\"":2}`,
		`{"a\u0062":1,"ab":2}`, `{"":1,"":2}`, `{"":1,"a":2}`, `{"a":[1,{"a":1}],"b":1}`, `{"x":["a","a"]}`,
		`{"a":1,"b":{"a":1,"b":{"a":1}},"a":3}`, `"a"`, `1`, `null`, `{"a":{"a":{"a":{"a":1}}}}`,
	}
}

// tokenDuplicate is the reference: the decoder's tokens, with a stack of
// key sets, one per open object.
func tokenDuplicate(b []byte) bool {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	type frame struct {
		object bool
		keys   map[string]bool
		key    bool // the next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch x := tok.(type) {
		case json.Delim:
			if x == '{' || x == '[' {
				if top != nil && top.object {
					top.key = true
				}
				stack = append(stack, &frame{object: x == '{', keys: map[string]bool{}, key: true})
				continue
			}
			stack = stack[:len(stack)-1]
			continue
		case string:
			if top != nil && top.object && top.key {
				if top.keys[x] {
					return true
				}
				top.keys[x], top.key = true, false
				continue
			}
		}
		if top != nil && top.object {
			top.key = true
		}
	}
}

// FuzzScanBody: on any body that decodes, the scan finds a duplicate key
// exactly when the token walk does.
func FuzzScanBody(f *testing.F) {
	for _, s := range scanSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var v any
		if json.Unmarshal(body, &v) != nil || !utf8.Valid(body) {
			return
		}
		if got, want := scanBody(body) != nil, tokenDuplicate(body); got != want {
			t.Fatalf("%q: scan says duplicate=%v, tokens %v", body, got, want)
		}
	})
}
