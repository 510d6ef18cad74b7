package httpapi

import (
	"crypto/rand"
	"encoding/base64"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/internal/convert"
)

// minSecretLen keeps operator-chosen secrets out of guessing range.
const minSecretLen = 16

var aclTables = []string{"acl_tokens"}

var aclTokenPair = convert.MustPair[api.ACLToken, fsm.ACLToken]()

func aclTokenToAPI(t *fsm.ACLToken) api.ACLToken {
	var out api.ACLToken
	aclTokenPair.ToAPI(&out, t)
	return out
}

func (s *Server) getACLToken(c echo.Context) error {
	id := param(c, "accessor")
	return s.blockingRead(c, func(st *fsm.State) (any, error) {
		t := st.ACLToken(id)
		if t == nil {
			return nil, notFound("acl token %q not found", id)
		}
		return aclTokenToAPI(t), nil
	}, aclTables...)
}

// getACLTokenSelf describes the caller's own token; authorize resolved it.
func (s *Server) getACLTokenSelf(c echo.Context) error {
	tok, ok := c.Get(tokenKey).(*fsm.ACLToken)
	if !ok {
		return badRequest("ACLs are not enabled on this cluster")
	}
	setIndex(c, s.b.State().Index(aclTables...))
	return c.JSON(http.StatusOK, aclTokenToAPI(tok))
}

// createACLToken makes a token. The secret is generated here, on the
// leader, outside the FSM; only its hash enters Raft, and the answer is the
// only place the secret is ever shown.
func (s *Server) createACLToken(c echo.Context) error {
	var in api.ACLTokenRequest
	if err := decodeBody(c, &in); err != nil {
		return err
	}
	tok, secret, err := aclTokenFromAPI(in, s.now())
	if err != nil {
		return err
	}
	res, err := s.apply(c.Request().Context(), fsm.UpsertACLTokenType, fsm.UpsertACLTokenRequest{Token: tok})
	if err != nil {
		return err
	}
	setIndex(c, res.Index)
	if stored, ok := res.Value.(*fsm.ACLToken); ok {
		tok = *stored
	}
	return c.JSON(http.StatusCreated, api.ACLTokenCreated{Token: aclTokenToAPI(&tok), SecretID: secret})
}

// aclTokenFromAPI checks a create request and makes the token to propose,
// with a fresh accessor id and, unless one was given, a fresh secret.
func aclTokenFromAPI(in api.ACLTokenRequest, now int64) (fsm.ACLToken, string, error) {
	secret := in.SecretID
	switch {
	case secret == "":
		secret = newSecret()
	case len(secret) < minSecretLen:
		return fsm.ACLToken{}, "", badRequest("secretId must be at least %d bytes", minSecretLen)
	}
	tok := fsm.ACLToken{
		AccessorID: api.NewID(), SecretHash: HashSecret(secret), Kind: in.Kind, NodeID: in.NodeID,
		Description: in.Description, CreateTime: now,
	}
	if err := fsm.ValidateACLToken(&tok); err != nil {
		return fsm.ACLToken{}, "", err
	}
	if tok.Kind == fsm.ACLWorker {
		if err := fsm.ValidNodeID(tok.NodeID); err != nil {
			return fsm.ACLToken{}, "", err
		}
	}
	return tok, secret, nil
}

func (s *Server) deleteACLToken(c echo.Context) error {
	if err := lastManagementToken(s.b.State(), param(c, "accessor")); err != nil {
		return err
	}
	res, err := s.apply(c.Request().Context(), fsm.DeleteACLTokenType, fsm.DeleteACLTokenRequest{AccessorID: param(c, "accessor")})
	if err != nil {
		return err
	}
	setIndex(c, res.Index)
	return c.NoContent(http.StatusNoContent)
}

// lastManagementToken refuses deleting the only management token (an
// admission check, on the leader): nobody could manage tokens, snapshots
// or peers any more, and the configured token comes back only when the
// next leader takes office.
func lastManagementToken(st *fsm.State, accessor string) error {
	tok := st.ACLToken(accessor)
	if tok == nil || tok.Kind != fsm.ACLManagement {
		return nil
	}
	for _, other := range st.ACLTokens() {
		if other.Kind == fsm.ACLManagement && other.AccessorID != accessor {
			return nil
		}
	}
	return &httpError{status: http.StatusConflict, code: api.CodeConflict,
		message: "it is the last management token: create another management token first"}
}

// newSecret is 32 random bytes, URL-safe base64 (43 characters).
func newSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}
