package api

import (
	"errors"
	"regexp"
	"strings"
	"unicode/utf8"
)

// safeUnquoted are values written to a .env as they are.
var safeUnquoted = regexp.MustCompile(`^[A-Za-z0-9_./:@,+%=-]+$`)

// DotenvValue renders a value for a compose project's .env so that
// docker-compose v1 (python-dotenv) and v2 (compose-go) read back the same
// value, or says why it cannot. Their common ground is narrow: both keep a
// single-quoted value literally (newlines and "$" included) except that v1
// still expands "${...}" and both treat a backslash before a quote as an
// escape; both decode \" and \n in double quotes but differ on "$" there.
// So: plain values unquoted, others single-quoted, values with a quote and
// no "$" or backslash double-quoted; what is left ("${", a quote with "$"
// or "\", a backslash before a backslash or at the end, NUL, CR, invalid
// UTF-8) cannot be written faithfully and is refused. The worker writes
// .env lines with it, and the servers refuse at submission a compose
// template's parameter it refuses, which would never deploy.
func DotenvValue(val string) (string, error) {
	switch {
	case !utf8.ValidString(val) || strings.ContainsAny(val, "\x00\r"):
		return "", errors.New("the value holds NUL, CR or invalid UTF-8")
	case strings.Contains(val, "${"):
		return "", errors.New("the value holds \"${\", which docker-compose v1 expands in a .env whatever the quoting")
	case safeUnquoted.MatchString(val):
		return val, nil
	case !strings.Contains(val, "'") && !badBackslash(val):
		return "'" + val + "'", nil
	case !strings.ContainsAny(val, `$\`):
		return `"` + strings.NewReplacer(`"`, `\"`, "\n", `\n`).Replace(val) + `"`, nil
	}
	if strings.Contains(val, "'") {
		return "", errors.New("a value with a single quote and \"$\" or a backslash cannot be written to a .env both compose versions read alike")
	}
	return "", errors.New("a value with two backslashes in a row or one at its end cannot be written to a .env both compose versions read alike")
}

// badBackslash is true when a backslash would escape something inside
// single quotes: another backslash, or the closing quote.
func badBackslash(v string) bool {
	return strings.Contains(v, `\\`) || strings.HasSuffix(v, `\`)
}
