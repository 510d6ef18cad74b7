package ledger

import (
	"errors"
	"fmt"
)

// Sentinels for errors.Is. Every error the package returns wraps one of them.
var (
	// ErrExhausted matches every *ExhaustedError.
	ErrExhausted = errors.New("ledger: resources exhausted")
	// ErrConflict: a reservation with the same key but a different node, pool
	// or grant already exists.
	ErrConflict = errors.New("ledger: conflicting reservation")
	// ErrUnknownNode: the reservation names a node the store does not have.
	ErrUnknownNode = errors.New("ledger: unknown node")
	// ErrInvalidGrant: a grant or request is malformed for the node (a core,
	// GPU or capability it does not have, negative amounts, duplicates, a GPU
	// share together with exclusive GPUs).
	ErrInvalidGrant = errors.New("ledger: invalid grant")
)

// Dimension names, matching the explain stage names of DESIGN §7.
const (
	DimCapacity = "capacity"
	DimCores    = "cores"
	DimMemory   = "memory"
	DimGPU      = "gpu"
	DimPoolCaps = "poolCaps"
	// DimCapabilityPrefix is followed by the capability name.
	DimCapabilityPrefix = "capability:"
)

// ExhaustedError says which dimension could not be satisfied. It is a normal
// outcome of placement, not a fault: the scheduler reports Dimension as the
// stage that filtered the node and Detail as the nearest miss.
type ExhaustedError struct {
	Dimension string
	Detail    string
}

func (e *ExhaustedError) Error() string {
	if e.Detail == "" {
		return "ledger: " + e.Dimension + " exhausted"
	}
	return "ledger: " + e.Dimension + " exhausted: " + e.Detail
}

// Is makes errors.Is(err, ErrExhausted) true for every *ExhaustedError.
func (e *ExhaustedError) Is(target error) bool { return target == ErrExhausted }

func exhausted(dim, format string, args ...any) error {
	return &ExhaustedError{Dimension: dim, Detail: fmt.Sprintf(format, args...)}
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidGrant, fmt.Sprintf(format, args...))
}
