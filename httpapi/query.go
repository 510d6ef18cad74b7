package httpapi

import (
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
)

// checkQuery refuses a query string that does not parse ("?cas=1%", a
// filter with a bare "%"): echo drops a pair it cannot decode without a
// word, so the request ran as if the parameter were absent, a conditional
// replace unconditional, a filtered list unfiltered. It refuses a parameter
// given twice too: no route takes a list, the handlers read the first
// value, and a proxy that reads the last would see another request (as
// with a JSON key given twice).
func checkQuery(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		q, err := url.ParseQuery(c.Request().URL.RawQuery)
		if err != nil {
			return badRequest("malformed query string (escape a literal %% as %%25): %v", err)
		}
		for name, vs := range q {
			if len(vs) > 1 {
				return badRequest("query parameter %s is given %d times; give it once", quote(name), len(vs))
			}
			if err := checkQueryName(name); err != nil {
				return err
			}
		}
		return next(c)
	}
}

// queryNames are the query parameters the API reads, on any route (the
// OpenAPI document lists them per operation; TestQueryNamesAreDocumented).
var queryNames = []string{
	"cas", "consistent", "digest", "filter", "follow", "force", "full", "index", "keys", "next_token",
	"per_page", "pool", "prefix", "stale", "state", "status", "stream", "tail", "wait",
}

// checkQueryName refuses a parameter named as one the API reads but in
// another case: a handler looks its name up exactly, so ?Cas=7 ran as if
// no CAS were given and replaced unconditionally. Other unknown names
// stay ignored, as clients may send their own.
func checkQueryName(name string) error {
	for _, known := range queryNames {
		if name != known && strings.EqualFold(name, known) {
			return badRequest("query parameter %s is not one this API reads: names are lowercase (%s)", quote(name), known)
		}
	}
	return nil
}
