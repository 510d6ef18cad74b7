package httpapi

import (
	"encoding/json"
	"net/http"
	"unicode/utf8"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
)

// scanBody looks once through a body that decoded as JSON for what the
// decoder lets pass: an object key given twice (the decoder keeps the last
// one, so two readers of one body could disagree on what it says) at any
// depth, and strings that are not UTF-8 (the decoder turns their bytes into
// U+FFFD). It tokenizes strings and structure only, without building
// values, so it costs a fraction of the decode.
func scanBody(b []byte) error {
	s := bodyScanner{b: b}
	return s.run()
}

type scanFrame struct {
	object    bool
	expectKey bool
	seen      bool                // a key was read
	first     string              // the first key: most objects have few
	keys      map[string]struct{} // every key, from the second on
}

type bodyScanner struct {
	b     []byte
	stack []scanFrame
}

func (s *bodyScanner) run() error {
	for i := 0; i < len(s.b); i++ {
		switch s.b[i] {
		case '{':
			s.stack = append(s.stack, scanFrame{object: true, expectKey: true})
		case '[':
			s.stack = append(s.stack, scanFrame{})
		case '}', ']':
			if len(s.stack) > 0 {
				s.stack = s.stack[:len(s.stack)-1]
			}
		case ',':
			if top := s.top(); top != nil && top.object {
				top.expectKey = true
			}
		case '"':
			end := stringEnd(s.b, i+1)
			if err := s.str(s.b[i+1 : end]); err != nil {
				return err
			}
			i = end
		}
	}
	return nil
}

func (s *bodyScanner) top() *scanFrame {
	if len(s.stack) == 0 {
		return nil
	}
	return &s.stack[len(s.stack)-1]
}

// str handles one string's raw bytes (between the quotes).
func (s *bodyScanner) str(raw []byte) error {
	if !utf8.Valid(raw) {
		return badRequest("malformed JSON body: a string is not valid UTF-8")
	}
	top := s.top()
	if top == nil || !top.object || !top.expectKey {
		return nil
	}
	top.expectKey = false
	key := string(raw)
	for _, c := range raw {
		if c == '\\' { // rare: compare keys as the decoder reads them
			_ = json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &key)
			break
		}
	}
	if !top.seen {
		top.first, top.seen = key, true
		return nil
	}
	if top.keys == nil {
		top.keys = map[string]struct{}{top.first: {}}
	}
	if _, dup := top.keys[key]; dup {
		return duplicateKey(key)
	}
	top.keys[key] = struct{}{}
	return nil
}

// stringEnd is the index of the quote closing the string starting at i.
func stringEnd(b []byte, i int) int {
	for ; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(b)
}

func duplicateKey(key string) error {
	return &httpError{status: http.StatusBadRequest, code: api.CodeDuplicateKey,
		message: "malformed JSON body: the key " + quote(key) + " appears twice in one object"}
}

// quote quotes a client's value for a message, cut to fsm.MaxEcho characters.
func quote(s string) string {
	b, _ := json.Marshal(fsm.Clip(s))
	return string(b)
}
