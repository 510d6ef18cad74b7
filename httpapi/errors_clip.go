package httpapi

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/amserver/amserver/fsm"
)

// clipArgs cuts the string arguments of a message to fsm.MaxEcho
// characters: ids, names and values come from clients, and an answer must
// not grow with what they send.
func clipArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		if s, ok := a.(string); ok {
			a = fsm.Clip(s)
		}
		out[i] = a
	}
	return out
}

// clipRuns is the net under every error message, whatever built it (the
// FSM names ids it did not find, unquoted): a run of characters without a
// space that is longer than fsm.MaxEcho is cut to it.
func clipRuns(msg string) string {
	if len(msg) <= fsm.MaxEcho {
		return msg
	}
	var b strings.Builder
	run := 0
	for _, r := range msg {
		if unicode.IsSpace(r) {
			run = 0
		} else if run++; run == fsm.MaxEcho {
			b.WriteRune('…')
			continue
		} else if run > fsm.MaxEcho {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// escapeControls writes the control characters of a message as \u escapes.
// Messages echo ids and values from clients (the FSM names an id it did not
// find as given), and a CLI prints them to an operator's terminal, where an
// ESC in a bundle id would be an instruction to the terminal.
func escapeControls(msg string) string {
	if !strings.ContainsFunc(msg, unicode.IsControl) {
		return msg
	}
	var b strings.Builder
	for _, r := range msg {
		if unicode.IsControl(r) {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
