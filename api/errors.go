package api

import (
	"errors"
	"fmt"
	"net/http"
)

// Error codes of the error body (DESIGN §7).
const (
	CodeBadRequest       = "badRequest"
	CodeDuplicateKey     = "duplicateKey" // a JSON object in the body names a key twice
	CodeUnauthorized     = "unauthorized"
	CodeForbidden        = "forbidden"
	CodeNotFound         = "notFound"
	CodeConflict         = "conflict" // the resource exists (with a different spec) or conflicts with current state
	CodeCASMismatch      = "casMismatch"
	CodeInUse            = "inUse"
	CodeBodyTooLarge     = "bodyTooLarge"
	CodeValidationFailed = "validationFailed"
	CodeNoLeader         = "noLeader"
	CodeOutcomeUnknown   = "outcomeUnknown"
	CodeInternal         = "internal"
	CodeNotImplemented   = "notImplemented"
	// CodeTooManyRequests (429): the server or this caller has too many
	// expensive requests (lists, event replays, plans) in flight; retry
	// after Retry-After.
	CodeTooManyRequests = "tooManyRequests"

	// A refused template archive (PUT /v1/templates/{name}): 413 when too
	// large, 400 otherwise.
	CodeTemplateTooLarge         = "templateTooLarge"
	CodeInvalidArchive           = "invalidArchive"
	CodeUnsafeArchivePath        = "unsafeArchivePath"
	CodeTemplateRuntimeUnknown   = "templateRuntimeUnknown"
	CodeTemplateRuntimeAmbiguous = "templateRuntimeAmbiguous"
	CodeInvalidComposeFile       = "invalidComposeFile"
	CodeInvalidTemplateName      = "invalidTemplateName"

	// CodeWorkerUnreachable (GET /v1/assignments/{id}/logs): the
	// assignment's worker is not known, publishes no log address (503), or
	// does not answer (502).
	CodeWorkerUnreachable = "workerUnreachable"
)

// Static validation finding codes (DESIGN §3.8).
const (
	FindingDuplicateJobName          = "duplicateJobName"
	FindingUnknownJobNameInPlacement = "unknownJobNameInPlacement"
	FindingSelfReferenceInPlacement  = "selfReferenceInPlacement"
	FindingContradictoryPlacement    = "contradictoryPlacement"
	FindingEmptyPoolList             = "emptyPoolList"
	FindingUnknownPoolName           = "unknownPoolName"
	FindingUnknownResiliencePool     = "unknownResiliencePool"
	FindingResilienceUnsatisfiable   = "resilienceUnsatisfiable"
	FindingInvalidExpression         = "invalidExpression"
	FindingInvalidRequirement        = "invalidRequirement"
	FindingUnsatisfiableCapacity     = "unsatisfiableCapacity"
	FindingUnsatisfiableCores        = "unsatisfiableCores"
	FindingUnsatisfiableMemory       = "unsatisfiableMemory"
	FindingUnsatisfiableGpu          = "unsatisfiableGpu"
	FindingUnsatisfiableCapability   = "unsatisfiableCapability"
	FindingLimitExceeded             = "limitExceeded" // a list, map, string or number over its bound
	FindingInvalidText               = "invalidText"   // a name, key, tag or label that is not printable UTF-8
	// Launches and runtimes.
	FindingInvalidTemplateRef   = "invalidTemplateRef"
	FindingUnknownTemplate      = "unknownTemplate"
	FindingInvalidParameterKey  = "invalidParameterKey"
	FindingUnknownRuntime       = "unknownRuntime"
	FindingUnsatisfiableRuntime = "unsatisfiableRuntime"
	// Bundle kinds (DESIGN §2.3).
	FindingInvalidKind    = "invalidKind"    // kind is not resilient, service or batch
	FindingInvalidCount   = "invalidCount"   // a service's count outside 1..10,000, or a negative spread bound
	FindingInvalidRestart = "invalidRestart" // negative attempts, delay or ttlAfterFinished, unknown mode
	FindingKindMismatch   = "kindMismatch"   // a field another kind owns (count on a resilient bundle, ...)
	// FindingReservedTag is a warning: a "__" tag was removed.
	FindingReservedTag = "reservedTag"
	// FindingTagCollision is a warning: two tags reach the workload as one
	// variable (TagEnvName), which holds the first's value.
	FindingTagCollision = "tagCollision"
	// FindingLazyServiceProvidesNothing: a lazy node service starts only
	// where a bundle consumes what it provides, so one that provides
	// nothing would never start.
	FindingLazyServiceProvidesNothing = "lazyServiceProvidesNothing"
)

// Finding is one static-validation result.
type Finding struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Job     string `json:"job,omitempty"`
}

// Error is a non-2xx answer. On the wire it is the value of the "error" key.
type Error struct {
	// Status is the HTTP status code; it is not part of the JSON body. It
	// is 0 on an error the client concluded without an answer (a write
	// whose connection broke: outcomeUnknown).
	Status   int       `json:"-"`
	Code     string    `json:"code"`
	Message  string    `json:"message"`
	Errors   []Finding `json:"errors"`
	Warnings []Finding `json:"warnings"`
}

// ErrorBody is the JSON body of every error response:
// {"error": {"code", "message", "errors": [], "warnings": []}}.
type ErrorBody struct {
	Error *Error `json:"error"`
}

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	if len(e.Errors) > 0 {
		msg = fmt.Sprintf("%s (%d findings, first: %s: %s)", msg, len(e.Errors), e.Errors[0].Code, e.Errors[0].Message)
	}
	if e.Status == 0 { // no answer: the client's own verdict (brokenWrite)
		return fmt.Sprintf("amserver: %s: %s", e.Code, msg)
	}
	return fmt.Sprintf("amserver: %d %s: %s", e.Status, e.Code, msg)
}

// IsCode reports whether err is (or wraps) an *Error with the given code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// codeForStatus names a code for an error body that did not carry one (a
// proxy in between, or a server that crashed mid-answer).
func codeForStatus(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusMethodNotAllowed:
		return CodeBadRequest
	case http.StatusUnauthorized:
		return CodeUnauthorized
	case http.StatusForbidden:
		return CodeForbidden
	case http.StatusNotFound:
		return CodeNotFound
	case http.StatusConflict:
		return CodeConflict
	case http.StatusRequestEntityTooLarge:
		return CodeBodyTooLarge
	case http.StatusUnprocessableEntity:
		return CodeValidationFailed
	case http.StatusNotImplemented:
		return CodeNotImplemented
	case http.StatusTooManyRequests:
		return CodeTooManyRequests
	}
	return CodeInternal
}
