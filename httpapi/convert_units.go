package httpapi

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/amserver/amserver/fsm"
)

// maxUnits bounds API quantities before they become milli-units, far below
// where ×1000 could overflow int64; the FSM's own limits are much tighter and
// produce the precise message.
const maxUnits = 9e12

// Time bounds: unix nanos in an int64 end in 2262, and 0 means "none".
var (
	minTime = time.Unix(0, 1)
	maxTime = time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)
)

// toMilli converts API units to milli-units, rounding to the nearest milli.
// Non-finite, negative, huge, and positive-but-below-resolution values are
// refused: they would otherwise wrap, or silently turn into "unset".
func toMilli(v float64) (int64, error) {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return 0, errors.New("must be a finite number")
	case v < 0:
		return 0, errors.New("must not be negative")
	case v > maxUnits:
		return 0, fmt.Errorf("must be at most %g", maxUnits)
	}
	m := int64(math.Round(v * 1000))
	if m == 0 && v > 0 {
		return 0, errors.New("is below the resolution of 0.001")
	}
	return m, nil
}

func fromMilli(m int64) float64 { return float64(m) / 1000 }

func parseInstant(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, fmt.Errorf("%q is not an RFC 3339 time", s)
	}
	if t.Before(minTime) || !t.Before(maxTime) {
		return 0, fmt.Errorf("%q must be after 1970 and before 2262", s)
	}
	return t.UnixNano(), nil
}

func formatInstant(nanos int64) string {
	if nanos == 0 {
		return ""
	}
	return time.Unix(0, nanos).UTC().Format(time.RFC3339Nano)
}

func instant(nanos int64) time.Time {
	if nanos == 0 {
		return time.Time{}
	}
	return time.Unix(0, nanos).UTC()
}

func parseDuration(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 10m", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q must not be negative", s)
	}
	return int64(d), nil
}

func formatDuration(nanos int64) string {
	if nanos == 0 {
		return ""
	}
	return time.Duration(nanos).String()
}

// converter collects conversion problems as findings, so a bundle's answer
// lists them all alongside static validation's.
type converter struct {
	job  string
	errs []fsm.Finding
}

func (cv *converter) fail(field string, err error) {
	cv.errs = append(cv.errs, fsm.Finding{
		Code: fsm.CodeInvalidRequirement, Job: cv.job, Message: fmt.Sprintf("%s %v", field, err),
	})
}

func (cv *converter) milli(field string, v float64) int64 {
	m, err := toMilli(v)
	if err != nil {
		cv.fail(field, err)
	}
	return m
}

func (cv *converter) instant(field, s string) int64 {
	n, err := parseInstant(s)
	if err != nil {
		cv.fail(field, err)
	}
	return n
}

func (cv *converter) duration(field, s string) int64 {
	n, err := parseDuration(s)
	if err != nil {
		cv.fail(field, err)
	}
	return n
}

// err is the first problem as an fsm.ErrInvalid (422), for resources whose
// validation has no findings list (nodes, pools, services).
func (cv *converter) err() error {
	if len(cv.errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", fsm.ErrInvalid, cv.errs[0].Message)
}
