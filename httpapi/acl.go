package httpapi

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
)

// access is what a route asks of the caller's token when ACLs are on.
type access uint8

const (
	// accessPublic: no token (liveness probes, the UI's static files).
	accessPublic access = iota
	// accessAnyToken: any valid token, whatever its kind.
	accessAnyToken
	accessRead
	accessWrite
	accessManagement
)

// aclRule is one route's requirement. ownNode lets a worker token through
// when the route's :id is the token's own node (DESIGN §9).
type aclRule struct {
	need    access
	ownNode bool
	// anyWorker lets every worker token through, whatever its node.
	anyWorker bool
}

// kindLevel ranks the kinds that form a hierarchy; a worker token is outside
// it and reaches only its own node's routes.
var kindLevel = map[string]access{
	fsm.ACLRead: accessRead, fsm.ACLWrite: accessWrite, fsm.ACLManagement: accessManagement,
}

// HashSecret is how a token's secret is stored and looked up: hex SHA-256.
// Secrets are random (at least 16 bytes), so an unsalted fast hash is
// enough; it keeps lookups O(1) on every request.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// requestSecret is the token a request carries: X-Amserver-Token, or an
// Authorization bearer token (what Prometheus scrapers send).
func requestSecret(r *http.Request) string {
	if t := r.Header.Get(api.HeaderToken); t != "" {
		return t
	}
	if auth := r.Header.Get("Authorization"); len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
		return strings.TrimSpace(auth[7:])
	}
	return ""
}

// authorize is the last middleware of every route, so that it runs where
// the request is served: on the leader for writes and linearizable reads
// (after forwarding and the read barrier, against the leader's state), on
// this server for local routes and ?stale reads. A route without a rule is
// denied: new routes are closed until someone decides who may call them.
func (s *Server) authorize(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !s.acl {
			return next(c)
		}
		rule, ok := s.aclRules[c.Request().Method+" "+c.Path()]
		if !ok {
			return forbidden("route %s %s has no ACL rule", c.Request().Method, c.Path())
		}
		if rule.need == accessPublic {
			return next(c)
		}
		tok, err := s.resolveToken(c)
		if err != nil {
			return err
		}
		if err := permits(rule, tok, c); err != nil {
			return err
		}
		c.Set(tokenKey, tok)
		return next(c)
	}
}

const tokenKey = "amserver.aclToken"

func (s *Server) resolveToken(c echo.Context) (*fsm.ACLToken, error) {
	secret := requestSecret(c.Request())
	if secret == "" {
		return nil, unauthorized("this endpoint needs an ACL token (header %s)", api.HeaderToken)
	}
	tok := s.b.State().ACLTokenBySecretHash(HashSecret(secret))
	if tok == nil {
		return nil, unauthorized("ACL token not found")
	}
	return tok, nil
}

func permits(rule aclRule, tok *fsm.ACLToken, c echo.Context) error {
	if rule.need == accessAnyToken {
		return nil
	}
	if tok.Kind == fsm.ACLWorker {
		if rule.anyWorker || (rule.ownNode && param(c, "id") == tok.NodeID) {
			return nil
		}
		return forbidden("a worker token for node %q cannot call %s %s", tok.NodeID, c.Request().Method, c.Request().URL.Path)
	}
	if kindLevel[tok.Kind] >= rule.need {
		return nil
	}
	return forbidden("a %s token cannot call %s %s", tok.Kind, c.Request().Method, c.Request().URL.Path)
}

func unauthorized(format string, args ...any) error {
	return &httpError{status: http.StatusUnauthorized, code: api.CodeUnauthorized, message: fmt.Sprintf(format, args...)}
}

func forbidden(format string, args ...any) error {
	return &httpError{status: http.StatusForbidden, code: api.CodeForbidden, message: fmt.Sprintf(format, args...)}
}
