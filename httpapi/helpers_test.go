package httpapi

import (
	"encoding/json"
	"fmt"

	"github.com/amserver/amserver/fsm"
)

func fmtNotFound(format string, args ...any) error {
	return fmt.Errorf("%w: %s", fsm.ErrNotFound, fmt.Sprintf(format, args...))
}

func errorsJoinInvalid(err error) error { return fmt.Errorf("%w: %w", fsm.ErrInvalid, err) }

func mustJSONNoT(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
