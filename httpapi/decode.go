package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"reflect"
	"strconv"

	"github.com/amserver/amserver/internal/jsonkeys"

	"github.com/labstack/echo/v4"
)

const bodyKey = "amserver.body"

// bodyBytes reads the request body once (within the body limit) and keeps
// it, so a write can be decoded and still be forwarded afterwards.
func bodyBytes(c echo.Context) ([]byte, error) {
	if b, ok := c.Get(bodyKey).([]byte); ok {
		return b, nil
	}
	req := c.Request()
	b, err := io.ReadAll(req.Body)
	if err != nil {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return nil, he // the body limit: 413
		}
		return nil, badRequest("reading request body: %v", err)
	}
	_ = req.Body.Close()
	req.Body = io.NopCloser(bytes.NewReader(b))
	c.Set(bodyKey, b)
	return b, nil
}

// decodeBody decodes the request body strictly into v: one JSON value, no
// unknown fields (nor known ones in another case), nothing after it.
func decodeBody(c echo.Context, v any) error {
	b, err := bodyBytes(c)
	if err != nil {
		return err
	}
	return decodeStrict(b, v)
}

func decodeStrict(b []byte, v any) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return badRequest("request body is empty; a JSON object is required")
	}
	// null decodes into nothing: every field would take its zero value.
	if string(bytes.TrimSpace(b)) == "null" {
		return badRequest("request body is null; a JSON object is required")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("malformed JSON body: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("malformed JSON body: data after the JSON value")
	}
	if err := scanBody(b); err != nil {
		return err
	}
	// The decoder matches keys to fields ignoring case; the API's are exact.
	if err := jsonkeys.Check(b, reflect.TypeOf(v)); err != nil {
		return badRequest("malformed JSON body: %v", err)
	}
	return nil
}

// param returns a path parameter, unescaped.
func param(c echo.Context, name string) string {
	v := c.Param(name)
	if u, err := url.PathUnescape(v); err == nil {
		return u
	}
	return v
}

// flagParam reads a boolean query parameter; a bare "?force" is true.
func flagParam(c echo.Context, name string) (bool, error) {
	q := c.QueryParams()
	if _, ok := q[name]; !ok {
		return false, nil
	}
	v := q.Get(name)
	if v == "" {
		return true, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, badRequest("query parameter %s=%q is not a boolean", name, v)
	}
	return b, nil
}

// uintParam reads an unsigned integer query parameter (0 when absent).
func uintParam(c echo.Context, name string) (uint64, bool, error) {
	q := c.QueryParams()
	if _, ok := q[name]; !ok {
		return 0, false, nil
	}
	n, err := strconv.ParseUint(q.Get(name), 10, 64)
	if err != nil {
		return 0, true, badRequest("query parameter %s=%q is not an unsigned integer", name, q.Get(name))
	}
	return n, true, nil
}

// enumParam reads a query parameter restricted to allowed values ("" when
// absent).
func enumParam(c echo.Context, name string, allowed ...string) (string, error) {
	v := c.QueryParam(name)
	if v == "" {
		return "", nil
	}
	for _, a := range allowed {
		if v == a {
			return v, nil
		}
	}
	return "", badRequest("query parameter %s=%q must be one of %v", name, v, allowed)
}

// checkBodyID reconciles an id in the body with the one in the path.
func checkBodyID(what, inBody, inPath string) error {
	if inBody != "" && inBody != inPath {
		return badRequest("%s %q in the body does not match %q in the path", what, inBody, inPath)
	}
	return nil
}

// emptyBody accepts a request without a body (or with an empty object) for
// action endpoints such as cordon.
func emptyBody(c echo.Context) error {
	b, err := bodyBytes(c)
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return err
	}
	return decodeStrict(b, &struct{}{})
}
