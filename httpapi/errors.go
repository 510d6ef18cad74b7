package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/raftstore"
)

// httpError is an answer decided by the API itself (bad input, a missing
// resource), as opposed to an error from the backend that classify maps.
type httpError struct {
	status   int
	code     string
	message  string
	errors   []fsm.Finding
	warnings []fsm.Finding
}

func (e *httpError) Error() string { return fmt.Sprintf("%d %s: %s", e.status, e.code, e.message) }

func badRequest(format string, args ...any) error {
	return &httpError{status: http.StatusBadRequest, code: api.CodeBadRequest, message: fmt.Sprintf(format, clipArgs(args)...)}
}

func notFound(format string, args ...any) error {
	return &httpError{status: http.StatusNotFound, code: api.CodeNotFound, message: fmt.Sprintf(format, clipArgs(args)...)}
}

// validationFailed rejects a submission whose findings hold errors.
func validationFailed(f fsm.Findings) error {
	msg := "validation failed"
	if len(f.Errors) > 0 {
		msg = fmt.Sprintf("validation failed: %s", f.Errors[0].Message)
	}
	return &httpError{status: http.StatusUnprocessableEntity, code: api.CodeValidationFailed,
		message: msg, errors: f.Errors, warnings: f.Warnings}
}

func noLeader(format string, args ...any) error {
	return fmt.Errorf("%w: %s", raftstore.ErrNoLeader, fmt.Sprintf(format, args...))
}

// classify maps any handler error to a status and an error body. Order
// matters: the most specific meaning wins.
func classify(err error) (int, *api.Error) {
	var (
		he *httpError
		ve *fsm.ValidationError
		fe *fsm.FindingError
		ee *echo.HTTPError
	)
	out := func(status int, code string) (int, *api.Error) {
		return status, &api.Error{Status: status, Code: code, Message: err.Error()}
	}
	switch {
	case errors.As(err, &he):
		return he.status, &api.Error{Status: he.status, Code: he.code, Message: he.message,
			Errors: findings(he.errors), Warnings: findings(he.warnings)}
	case errors.As(err, &ve):
		e := &api.Error{Status: http.StatusUnprocessableEntity, Code: api.CodeValidationFailed, Message: err.Error(),
			Errors: findings(ve.Findings.Errors), Warnings: findings(ve.Findings.Warnings)}
		return e.Status, e
	case errors.As(err, &fe):
		e := &api.Error{Status: http.StatusUnprocessableEntity, Code: api.CodeValidationFailed, Message: err.Error(),
			Errors: findings([]fsm.Finding{fe.Finding})}
		return e.Status, e
	case errors.As(err, &ee):
		return classifyEcho(ee)
	case errors.Is(err, raftstore.ErrOutcomeUnknown):
		return out(http.StatusServiceUnavailable, api.CodeOutcomeUnknown)
	case errors.Is(err, raftstore.ErrNoLeader), errors.Is(err, raftstore.ErrNotLeader),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		// Outside Apply a timeout is retryable: nothing was changed.
		return out(http.StatusServiceUnavailable, api.CodeNoLeader)
	case errors.Is(err, ErrNotImplemented):
		return out(http.StatusNotImplemented, api.CodeNotImplemented)
	}
	return classifyFSM(err)
}

func classifyFSM(err error) (int, *api.Error) {
	status, code := http.StatusInternalServerError, api.CodeInternal
	switch {
	case errors.Is(err, fsm.ErrNotFound):
		status, code = http.StatusNotFound, api.CodeNotFound
	case errors.Is(err, fsm.ErrCASMismatch):
		status, code = http.StatusConflict, api.CodeCASMismatch
	case errors.Is(err, fsm.ErrExists):
		status, code = http.StatusConflict, api.CodeConflict
	case errors.Is(err, fsm.ErrInUse):
		status, code = http.StatusConflict, api.CodeInUse
	case errors.Is(err, fsm.ErrConflict):
		status, code = http.StatusConflict, api.CodeConflict
	case errors.Is(err, fsm.ErrInvalid):
		status, code = http.StatusUnprocessableEntity, api.CodeValidationFailed
	}
	return status, &api.Error{Status: status, Code: code, Message: err.Error()}
}

// classifyEcho maps echo's own errors: routing (404, 405), the body limit
// (413) and anything a middleware returns.
func classifyEcho(ee *echo.HTTPError) (int, *api.Error) {
	code := api.CodeInternal
	switch ee.Code {
	case http.StatusBadRequest, http.StatusMethodNotAllowed:
		code = api.CodeBadRequest
	case http.StatusUnauthorized:
		code = api.CodeUnauthorized
	case http.StatusForbidden:
		code = api.CodeForbidden
	case http.StatusNotFound:
		code = api.CodeNotFound
	case http.StatusRequestEntityTooLarge:
		code = api.CodeBodyTooLarge
	}
	msg := fmt.Sprint(ee.Message)
	if ee.Code == http.StatusRequestEntityTooLarge {
		msg = "request body is larger than the limit"
	}
	return ee.Code, &api.Error{Status: ee.Code, Code: code, Message: msg}
}

// routingMessage says what echo's router only names by status ("Not
// Found", "Method Not Allowed"): the request's method and path and, for a
// 405, the methods the path takes (its Allow header).
func routingMessage(err error, c echo.Context) string {
	req := c.Request()
	path := quote(req.URL.Path)
	switch {
	case errors.Is(err, echo.ErrNotFound):
		return fmt.Sprintf("no route for %s %s (docs/openapi.yaml lists the API)", quote(req.Method), path)
	case errors.Is(err, echo.ErrMethodNotAllowed):
		msg := fmt.Sprintf("method %s is not allowed on %s", quote(req.Method), path)
		if allow := c.Response().Header().Get(echo.HeaderAllow); allow != "" {
			msg += "; it takes " + allow
		}
		return msg
	}
	return ""
}

// bodyLimitOf is the body limit of c's route.
func (s *Server) bodyLimitOf(c echo.Context) string {
	switch {
	case isTemplatePush(c):
		return templateBodyLimit
	case isSnapshotRestore(c):
		return s.snapshotLimit
	}
	return s.bodyLimit
}

func findings(list []fsm.Finding) []api.Finding {
	out := make([]api.Finding, len(list))
	for i, f := range list {
		out[i] = api.Finding{Code: f.Code, Message: f.Message, Job: f.Job}
	}
	return out
}

// handleError is echo's HTTPErrorHandler: the one place errors end up, so
// it is also the one place that logs them.
func (s *Server) handleError(err error, c echo.Context) {
	status, body := classify(err)
	body.Message = clipRuns(body.Message)
	for _, list := range [][]api.Finding{body.Errors, body.Warnings} {
		for i := range list {
			list[i].Message = escapeControls(list[i].Message)
		}
	}
	if body.Errors == nil {
		body.Errors = []api.Finding{}
	}
	if body.Warnings == nil {
		body.Warnings = []api.Finding{}
	}
	req := c.Request()
	if msg := routingMessage(err, c); msg != "" {
		body.Message = msg
	}
	if body.Code == api.CodeBodyTooLarge {
		body.Message = fmt.Sprintf("request body is larger than the limit of %s %s (%s)", req.Method, quote(req.URL.Path), s.bodyLimitOf(c))
	}
	body.Message = escapeControls(body.Message)
	// Deliberate answers (httpError) and 4xx are routine; other 5xx are
	// failures worth an operator's attention.
	level := slog.LevelDebug
	var he *httpError
	if status >= 500 && status != http.StatusServiceUnavailable && !errors.As(err, &he) {
		level = slog.LevelError
	}
	s.log.Log(req.Context(), level, "request failed", "method", req.Method, "path", req.URL.Path,
		"status", status, "err", err)
	if c.Response().Committed {
		return // the answer is already on its way; nothing more can be said
	}
	if status == http.StatusServiceUnavailable && body.Code == api.CodeNoLeader || status == http.StatusTooManyRequests {
		c.Response().Header().Set("Retry-After", "1")
	}
	if req.Method == http.MethodHead {
		_ = c.NoContent(status)
		return
	}
	_ = c.JSON(status, api.ErrorBody{Error: body})
}

// validationErr rejects a value the FSM would refuse, before it reaches
// Raft, as a 422 carrying one invalidRequirement finding (DESIGN §6.2).
func validationErr(format string, args ...any) error {
	msg := fmt.Sprintf(format, clipArgs(args)...)
	return &fsm.FindingError{Finding: fsm.Finding{Code: fsm.CodeInvalidRequirement, Message: msg}}
}
