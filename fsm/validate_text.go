package fsm

import "unicode/utf8"

// MaxEcho is how many characters of a client's value an error message
// repeats: a 10 KB id is cut, so an answer never grows with abuse.
const MaxEcho = 128

// Clip cuts s to at most MaxEcho characters, the last being "…" when it cut.
func Clip(s string) string {
	if len(s) <= MaxEcho || utf8.RuneCountInString(s) <= MaxEcho {
		return s
	}
	n := 0
	for i := range s {
		if n == MaxEcho-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// clip is Clip, for this package's messages.
func clip(s string) string { return Clip(s) }
