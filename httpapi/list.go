package httpapi

import (
	"context"
	"encoding/base64"
	"iter"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
)

// Every list endpoint pages, filters and summarises the same way (DESIGN
// §7): a list is declared as a listing and served by serveList, so a new
// list gets ?per_page, ?next_token, ?prefix, ?filter, ?full, blocking
// queries and the limits on expensive reads by declaration.
//
// Pages are in id order and each starts strictly after the last id of the
// one before (the token), so a walk sees every object that existed for the
// whole walk exactly once, whatever is written meanwhile.

const (
	// defaultMaxScan bounds the entries one page examines: a filter that
	// matches little answers a short (even empty) page with a token to go
	// on, instead of reading a hundred thousand bundles in one request.
	defaultMaxScan = 10_000
	// defaultMaxPageBytes bounds a page's body: a page of a thousand whole
	// bundles of up to 1 MiB each would otherwise be built in memory (twice)
	// whole. A page stops once its body passes it, holding at least one
	// entry, and gives a token to go on, as a scan-bounded page does.
	defaultMaxPageBytes = 8 << 20
	// maxPrefixLen bounds ?prefix= (ids are at most 63 bytes).
	maxPrefixLen = 256
	// tokenVersion starts every token, so the format can change.
	tokenVersion = "p1"
)

// listing declares one list endpoint over rows of type T.
type listing[T any] struct {
	// name is the list's name in its tokens ("bundles").
	name string
	// variable is the name the filter binds an entry to ("bundle").
	variable string
	// tables are what the list reads, for its index and blocking.
	tables []string
	// scan yields the rows after an id with a prefix, in id order.
	scan func(st *fsm.State, after, prefix string) iter.Seq[*T]
	id   func(*T) string
	// narrow reads the list's own query parameters (?pool=, ?state=)
	// into a predicate; nil when it has none.
	narrow func(c echo.Context) (func(*T) bool, error)
	// render makes the converters for one view of the state.
	render func(s *Server, st *fsm.State) renderer[T]
}

// renderer turns a row into its API forms. full is the whole object (what
// ?full=true answers and ?filter sees); summary is the default entry,
// given the row and, when one was built, its full form (nil otherwise).
// A form is used only until the next row is rendered, so a renderer may
// return the same value (a pointer to it) each time.
type renderer[T any] struct {
	full    func(*T) any
	summary func(row *T, full any) any
}

// wholeObjects is the renderer of a list whose entries are the whole
// objects: pools, services and tokens are small.
func wholeObjects[T any](full func(*T) any) renderer[T] {
	return renderer[T]{full: full, summary: func(row *T, f any) any {
		if f != nil {
			return f
		}
		return full(row)
	}}
}

// listParams are a list request's paging, narrowing and form.
type listParams struct {
	perPage  int
	maxScan  int
	maxBytes int // 0: no bound on the body
	after    string
	prefix   string
	full     bool
	filter   *listFilter
}

// serveList is the handler of a declared list.
func serveList[T any](s *Server, l listing[T]) echo.HandlerFunc {
	return func(c echo.Context) error {
		p, err := parseListParams(c, l.name, l.variable)
		if err != nil {
			return err
		}
		p.maxScan, p.maxBytes = s.maxScan, s.maxPageBytes
		keep := func(*T) bool { return true }
		if l.narrow != nil {
			if keep, err = l.narrow(c); err != nil {
				return err
			}
		}
		ctx := c.Request().Context()
		return s.expensiveRead(c, func(st *fsm.State) (any, error) {
			return l.page(ctx, st, p, keep, l.render(s, st))
		}, l.tables...)
	}
}

// page builds one page: up to perPage entries after the token that pass
// the narrowing and the filter, examining at most p.maxScan rows and
// stopping once the body passes p.maxBytes. The next
// page starts after the last row examined, served or skipped. Each entry is
// encoded as it is rendered (page_encode.go); an error leaves nothing.
func (l listing[T]) page(ctx context.Context, st *fsm.State, p listParams, keep func(*T) bool, r renderer[T]) (pageResult, error) {
	enc := newPageEncoder()
	defer enc.release()
	last, scanned, more := "", 0, false
	for row := range l.scan(st, p.after, p.prefix) {
		if enc.n == p.perPage || scanned == p.maxScan || p.maxBytes > 0 && enc.n > 0 && enc.size() >= p.maxBytes {
			more = true // a row follows
			break
		}
		if scanned++; scanned%256 == 0 {
			if err := ctx.Err(); err != nil {
				return pageResult{}, err // the client left: stop the work
			}
		}
		last = l.id(row)
		if !keep(row) {
			continue
		}
		item, ok, err := l.entry(ctx, row, p, r)
		if err == nil && ok {
			err = enc.add(item)
		}
		if err != nil {
			return pageResult{}, err
		}
	}
	buf := enc.finish()
	res := pageResult{body: buf.Bytes(), buf: buf}
	if more {
		res.next = encodeToken(l.name, last)
	}
	return res, nil
}

// entry renders one row for the page, or reports it filtered out.
func (l listing[T]) entry(ctx context.Context, row *T, p listParams, r renderer[T]) (any, bool, error) {
	var full any
	if p.full || p.filter != nil {
		full = r.full(row)
	}
	if p.filter != nil {
		ok, err := p.filter.match(ctx, full)
		if err != nil || !ok {
			return nil, false, err
		}
	}
	if p.full {
		return full, true, nil
	}
	return r.summary(row, full), true, nil
}

func parseListParams(c echo.Context, list, variable string) (listParams, error) {
	p := listParams{perPage: api.DefaultPerPage, prefix: c.QueryParam("prefix")}
	if v, ok := c.QueryParams()["per_page"]; ok {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 1 || n > api.MaxPerPage {
			return p, badRequest("query parameter per_page=%q must be an integer from 1 to %d", v[0], api.MaxPerPage)
		}
		p.perPage = n
	}
	if len(p.prefix) > maxPrefixLen {
		return p, badRequest("query parameter prefix is %d bytes, at most %d allowed", len(p.prefix), maxPrefixLen)
	}
	if tok := c.QueryParam("next_token"); tok != "" {
		after, err := decodeToken(list, tok)
		if err != nil {
			return p, err
		}
		p.after = after
	}
	full, err := flagParam(c, "full")
	if err != nil {
		return p, err
	}
	p.full = full
	if expr := c.QueryParam("filter"); expr != "" {
		if p.filter, err = compileFilter(variable, expr); err != nil {
			return p, err
		}
	}
	return p, nil
}

// A token is the list's name and the last id examined, base64url-encoded:
// opaque to clients, and refused by any other list.
func encodeToken(list, after string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(tokenVersion + ":" + list + ":" + after))
}

func decodeToken(list, tok string) (string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	parts := strings.SplitN(string(raw), ":", 3)
	switch {
	case err != nil || len(parts) != 3 || parts[0] != tokenVersion || parts[2] == "":
		return "", badRequest("query parameter next_token=%q is not a token this server issued", tok)
	case parts[1] != list:
		return "", badRequest("query parameter next_token is a token of the %s list, not of %s", parts[1], list)
	}
	return parts[2], nil
}
