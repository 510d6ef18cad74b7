package httpapi

import (
	"net/url"

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
		}
		return next(c)
	}
}
