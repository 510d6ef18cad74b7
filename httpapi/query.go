package httpapi

import (
	"net/url"

	"github.com/labstack/echo/v4"
)

// checkQuery refuses a query string that does not parse ("?cas=1%", a
// filter with a bare "%"). echo drops a pair it cannot decode without a
// word, so the request ran as if the parameter were absent: a conditional
// replace became unconditional, a filtered list listed everything.
func checkQuery(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if _, err := url.ParseQuery(c.Request().URL.RawQuery); err != nil {
			return badRequest("malformed query string (escape a literal %% as %%25): %v", err)
		}
		return next(c)
	}
}
