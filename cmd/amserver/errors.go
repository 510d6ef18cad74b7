package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/amserver/amserver/api"
)

// Exit codes, so that scripts can tell what went wrong without parsing text.
const (
	exitOK       = 0
	exitFailure  = 1 // a server-side failure or anything unexpected
	exitUsage    = 2 // bad flags or arguments, an unreadable or invalid input file
	exitNotFound = 3
	exitConflict = 4 // exists with a different spec, CAS mismatch, in use
	exitInvalid  = 5 // validation failed (422)
)

// usageError is a mistake on the command line or in an input file.
type usageError struct {
	err error
	// cmdPath, when set, adds a pointer to the command's help.
	cmdPath string
}

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{err: fmt.Errorf(format, args...)}
}

// asUsage marks err as a usage error unless it already is one.
func asUsage(err error) error {
	var u usageError
	if err == nil || errors.As(err, &u) {
		return err
	}
	return usageError{err: err}
}

// subjectError names what a request was about, so that an API error can be
// told as `bundle "enc-1" not found` rather than as an HTTP status.
type subjectError struct {
	kind, id string
	err      error
}

func about(err error, kind, id string) error {
	if err == nil {
		return nil
	}
	return &subjectError{kind: kind, id: id, err: err}
}

func (e *subjectError) Error() string { return e.subject() + ": " + e.err.Error() }
func (e *subjectError) Unwrap() error { return e.err }

func (e *subjectError) subject() string {
	if e.id == "" {
		return e.kind
	}
	return fmt.Sprintf("%s %q", e.kind, e.id)
}

// sentenceError already reads as a complete sentence; the wrapped error
// still decides the exit code.
type sentenceError struct {
	msg string
	err error
}

func (e *sentenceError) Error() string { return e.msg }
func (e *sentenceError) Unwrap() error { return e.err }

func sentence(err error, format string, args ...any) error {
	return &sentenceError{msg: fmt.Sprintf(format, args...), err: err}
}

func exitCode(err error) int {
	var (
		u  usageError
		fe *flagsError // the agent's and dev's bad flag values and config files
	)
	if errors.As(err, &u) || errors.As(err, &fe) {
		return exitUsage
	}
	var e *api.Error
	if !errors.As(err, &e) {
		return exitFailure
	}
	switch {
	case e.Status == http.StatusNotFound || e.Code == api.CodeNotFound:
		return exitNotFound
	case e.Status == http.StatusConflict || e.Code == api.CodeConflict ||
		e.Code == api.CodeCASMismatch || e.Code == api.CodeInUse:
		return exitConflict
	case e.Status == http.StatusUnprocessableEntity || e.Code == api.CodeValidationFailed:
		return exitInvalid
	case e.Status == http.StatusBadRequest || e.Status == http.StatusRequestEntityTooLarge:
		// The server refused what we sent as malformed: the input is at fault.
		return exitUsage
	}
	return exitFailure
}

// report prints err as one sentence, then any validation findings.
func (a *app) report(err error) {
	fmt.Fprintf(a.err, "error: %s\n", a.describe(err))
	var e *api.Error
	if errors.As(err, &e) {
		printFindings(a.err, e.Errors, e.Warnings)
	}
	var u usageError
	if errors.As(err, &u) && u.cmdPath != "" {
		fmt.Fprintf(a.err, "Run '%s --help' for usage.\n", u.cmdPath)
	}
}

func (a *app) describe(err error) string {
	var (
		s  *sentenceError
		se *subjectError
		e  *api.Error
		op *net.OpError
	)
	if msg := a.describeTLS(err); msg != "" {
		return msg
	}
	switch {
	case errors.As(err, &s):
		return s.msg
	case errors.As(err, &e):
		kind, id := "", ""
		if errors.As(err, &se) {
			kind, id = se.kind, se.id
		}
		return describeAPI(kind, id, e)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("timed out after %s (see --timeout)", a.timeout)
	case errors.Is(err, context.Canceled):
		return "interrupted"
	case errors.As(err, &op) && op.Op == "listen":
		// The agent's own listener, not a client call: say which address.
		return fmt.Sprintf("cannot listen on %s: %v (another process holds it? choose another with the matching --*-addr flag)", op.Addr, op.Err)
	case errors.As(err, &op):
		return fmt.Sprintf("cannot reach the server at %s: %v", a.serverAddr, op.Err)
	}
	return err.Error()
}

// describeAPI turns an API error into a sentence about its subject.
func describeAPI(kind, id string, e *api.Error) string {
	subject := "the requested resource"
	if kind != "" {
		subject = (&subjectError{kind: kind, id: id}).subject()
	}
	// The server's messages often start with "bundle enc-1: "; the sentence
	// already names the subject, so drop the repetition.
	msg := strings.TrimSpace(strings.TrimPrefix(e.Message, kind+" "+id+": "))
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	switch e.Code {
	case api.CodeNotFound:
		if kind == "" {
			if strings.Contains(msg, "not found") { // the server's sentence already says it
				return msg
			}
			return "not found: " + msg
		}
		return subject + " not found"
	case api.CodeCASMismatch:
		return fmt.Sprintf("%s changed since it was read (%s); read it again and retry", subject, msg)
	case api.CodeInUse:
		return fmt.Sprintf("%s is in use (%s)", subject, strings.TrimPrefix(msg, "in use: "))
	case api.CodeConflict:
		return fmt.Sprintf("%s: %s", subject, msg)
	case api.CodeValidationFailed:
		if n := len(e.Errors); n > 0 {
			return fmt.Sprintf("%s failed validation with %d %s", subject, n, plural(n, "error", "errors"))
		}
		return fmt.Sprintf("%s is invalid: %s", subject, strings.TrimPrefix(msg, "invalid: "))
	case api.CodeNoLeader:
		return "the cluster has no leader right now; retry shortly"
	case api.CodeOutcomeUnknown:
		return fmt.Sprintf("the outcome of the change to %s is unknown (%s); check it before retrying", subject, msg)
	case api.CodeUnauthorized:
		return "permission denied: a valid token is required (--token or " + envToken + ")"
	case api.CodeForbidden:
		return "permission denied: the token does not allow this (" + msg + ")"
	case api.CodeBodyTooLarge:
		return fmt.Sprintf("%s is larger than the server accepts", subject)
	case api.CodeNotImplemented:
		return "this server does not implement that yet (" + msg + ")"
	case api.CodeBadRequest:
		return fmt.Sprintf("the server rejected the request for %s: %s", subject, msg)
	}
	if e.Status >= 400 && e.Status < 500 { // a code of its own (a refused archive): the request's fault
		return fmt.Sprintf("the server rejected the request for %s (%s): %s", subject, e.Code, msg)
	}
	return fmt.Sprintf("server error (%d %s): %s", e.Status, e.Code, msg)
}

// printFindings lists validation errors and warnings as a table.
func printFindings(w io.Writer, errs, warns []api.Finding) {
	if len(errs)+len(warns) == 0 {
		return
	}
	t := newTable(w)
	t.row("SEVERITY", "CODE", "JOB", "MESSAGE")
	for _, f := range errs {
		t.row("error", f.Code, orDash(f.Job), f.Message)
	}
	for _, f := range warns {
		t.row("warning", f.Code, orDash(f.Job), f.Message)
	}
	_ = t.flush() // a failed terminal write has no one to report to
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
