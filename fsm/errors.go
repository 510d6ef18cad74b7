package fsm

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors returned (wrapped) as apply responses. The HTTP layer maps
// them to status codes; none of them changes state.
var (
	ErrNotFound    = errors.New("not found")
	ErrExists      = errors.New("already exists")
	ErrCASMismatch = errors.New("modify index mismatch")
	ErrInUse       = errors.New("in use")
	ErrInvalid     = errors.New("invalid")
	ErrConflict    = errors.New("conflicts with current state")
)

// Finding is one static-validation result (DESIGN §3.8).
type Finding struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Job     string `json:"job,omitempty"`
}

// Findings separates errors, which reject a submission, from warnings.
type Findings struct {
	Errors   []Finding `json:"errors"`
	Warnings []Finding `json:"warnings"`
}

// Valid reports whether there are no errors.
func (f Findings) Valid() bool { return len(f.Errors) == 0 }

// ValidationError rejects a bundle whose static validation found errors.
type ValidationError struct {
	Findings Findings
}

func (e *ValidationError) Error() string {
	codes := make([]string, len(e.Findings.Errors))
	for i, f := range e.Findings.Errors {
		codes[i] = f.Code
	}
	return fmt.Sprintf("validation failed: %s", strings.Join(codes, ", "))
}

// Is makes errors.Is(err, ErrInvalid) true for validation failures.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }
