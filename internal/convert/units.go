package convert

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"
	"unsafe"
)

// MaxUnits bounds API quantities before they become milli-units, far below
// where ×1000 could overflow int64; the FSM's own limits are much tighter and
// produce the precise message.
const MaxUnits = 9e12

// Time bounds: unix nanos in an int64 end in 2262, and 0 means "none".
var (
	minTime = time.Unix(0, 1)
	maxTime = time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC)
)

// unitCodec converts an int64 FSM field tagged with a unit.
func unitCodec(cd *codec, a, f reflect.Type, unit string) error {
	if f.Kind() != reflect.Int64 {
		return errorf(a, f, "unit %q needs an int64 FSM field", unit)
	}
	switch {
	case unit == "milli" && a.Kind() == reflect.Float64:
		cd.toFSM = func(s *state, dst, src unsafe.Pointer) { *(*int64)(dst) = s.check(ToMilli(*(*float64)(src))) }
		cd.toAPI = func(dst, src unsafe.Pointer) { *(*float64)(dst) = FromMilli(*(*int64)(src)) }
	case unit == "instant" && a.Kind() == reflect.String:
		cd.toFSM = func(s *state, dst, src unsafe.Pointer) { *(*int64)(dst) = s.check(ParseInstant(*(*string)(src))) }
		cd.toAPI = func(dst, src unsafe.Pointer) { *(*string)(dst) = FormatInstant(*(*int64)(src)) }
	case unit == "instant" && a == timeType:
		cd.toFSM = func(s *state, dst, src unsafe.Pointer) { *(*int64)(dst) = s.check(instantOf(*(*time.Time)(src))) }
		cd.toAPI = func(dst, src unsafe.Pointer) { *(*time.Time)(dst) = Instant(*(*int64)(src)) }
	case unit == "duration" && a.Kind() == reflect.String:
		cd.toFSM = func(s *state, dst, src unsafe.Pointer) { *(*int64)(dst) = s.check(ParseDuration(*(*string)(src))) }
		cd.toAPI = func(dst, src unsafe.Pointer) { *(*string)(dst) = FormatDuration(*(*int64)(src)) }
	default:
		return errorf(a, f, "unit %q cannot convert from %s", unit, a)
	}
	return nil
}

// check records err against the current field; the value is kept as
// returned (0 on error).
func (s *state) check(v int64, err error) int64 {
	if err != nil {
		s.fail(err)
	}
	return v
}

// ToMilli converts API units to milli-units, rounding to the nearest milli.
// Non-finite, negative, huge, and positive-but-below-resolution values are
// refused: they would otherwise wrap, or silently turn into "unset".
func ToMilli(v float64) (int64, error) {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return 0, errors.New("must be a finite number")
	case v < 0:
		return 0, errors.New("must not be negative")
	case v > MaxUnits:
		return 0, fmt.Errorf("must be at most %s", strconv.FormatFloat(MaxUnits, 'f', -1, 64))
	}
	m := int64(math.Round(v * 1000))
	if m == 0 && v > 0 {
		return 0, errors.New("is below the resolution of 0.001")
	}
	return m, nil
}

// FromMilli converts milli-units to API units.
func FromMilli(m int64) float64 { return float64(m) / 1000 }

// ParseInstant reads an RFC 3339 time as unix nanos; "" is 0 (none).
func ParseInstant(s string) (int64, error) {
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

func instantOf(t time.Time) (int64, error) {
	if t.IsZero() {
		return 0, nil
	}
	if t.Before(minTime) || !t.Before(maxTime) {
		return 0, fmt.Errorf("%s must be after 1970 and before 2262", t.Format(time.RFC3339Nano))
	}
	return t.UnixNano(), nil
}

// FormatInstant writes unix nanos as RFC 3339 in UTC; 0 is "".
func FormatInstant(nanos int64) string {
	if nanos == 0 {
		return ""
	}
	return time.Unix(0, nanos).UTC().Format(time.RFC3339Nano)
}

// Instant is unix nanos as a UTC time; 0 is the zero time.
func Instant(nanos int64) time.Time {
	if nanos == 0 {
		return time.Time{}
	}
	return time.Unix(0, nanos).UTC()
}

// ParseDuration reads a Go duration as nanos; "" is 0.
func ParseDuration(s string) (int64, error) {
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

// FormatDuration writes nanos as a Go duration; 0 is "".
func FormatDuration(nanos int64) string {
	if nanos == 0 {
		return ""
	}
	return time.Duration(nanos).String()
}
