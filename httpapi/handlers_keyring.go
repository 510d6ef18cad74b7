package httpapi

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/gossip"
)

// getKeyring lists the replicated gossip keyring and, from this server's
// gossip view, what each member has applied. Key material only with
// ?keys=true (workers fetch it to follow rotations).
func (s *Server) getKeyring(c echo.Context) error {
	withKeys, err := flagParam(c, "keys")
	if err != nil {
		return err
	}
	if tok, ok := c.Get(tokenKey).(*fsm.ACLToken); ok && withKeys && tok.Kind != fsm.ACLManagement && tok.Kind != fsm.ACLWorker {
		return forbidden("key material (?keys=true) needs a management or worker token, not %s", tok.Kind)
	}
	return s.blockingRead(c, func(st *fsm.State) (any, error) {
		return keyringToAPI(st.Keyring(), s.b.Members(), withKeys), nil
	}, tableKeyring)
}

func keyringToAPI(kr *fsm.Keyring, members []gossip.Member, withKeys bool) api.Keyring {
	out := api.Keyring{Keys: []api.KeyringKey{}, Members: []api.KeyringMember{}}
	var want []string // the fingerprints a converged member reports, primary first
	if kr != nil {
		want = []string{gossip.KeyFingerprint(kr.Primary)}
		for _, k := range kr.Keys {
			fp := gossip.KeyFingerprint(k)
			key := api.KeyringKey{Fingerprint: fp, Primary: bytes.Equal(k, kr.Primary)}
			if withKeys {
				key.Key = base64.StdEncoding.EncodeToString(k)
			}
			if !key.Primary {
				want = append(want, fp)
			}
			out.Keys = append(out.Keys, key)
		}
		slices.Sort(want[1:])
	}
	for _, m := range members {
		km := api.KeyringMember{Name: m.Name, Role: string(m.Meta.Role), Status: string(m.Status), Keys: []string{}}
		if len(m.Meta.Keyring) > 0 {
			km.Primary, km.Keys = m.Meta.Keyring[0], slices.Sorted(slices.Values(m.Meta.Keyring))
		}
		km.Converged = want != nil && slices.Equal(m.Meta.Keyring, want)
		out.Members = append(out.Members, km)
		if !live(m) {
			continue
		}
		for i := range out.Keys {
			k := &out.Keys[i]
			if slices.Contains(m.Meta.Keyring, k.Fingerprint) {
				k.Installed++
			}
			if km.Primary == k.Fingerprint {
				k.PrimaryOn++
			}
		}
	}
	return out
}

// live members take part in gossip now, so a key change must reach them.
func live(m gossip.Member) bool {
	return m.Status == gossip.StatusAlive || m.Status == gossip.StatusSuspect
}

// changeKeyring installs, uses or removes a gossip key through Raft. Use and
// remove first check that every live member has caught up with the step
// before (the key installed; nobody encrypting with the key to remove), so
// that a rotation never leaves a member unable to read the others; ?force
// skips the check.
func (s *Server) changeKeyring(c echo.Context) error {
	force, err := flagParam(c, "force")
	if err != nil {
		return err
	}
	var in api.KeyringRequest
	if err := decodeBody(c, &in); err != nil {
		return err
	}
	req, err := keyringFromAPI(in)
	if err != nil {
		return err
	}
	kr := s.b.State().Keyring()
	if kr == nil {
		return &httpError{status: http.StatusConflict, code: api.CodeConflict,
			message: "the cluster has no gossip keyring: start the servers with --encrypt to enable gossip encryption"}
	}
	// The leader's keyring refuses what can never apply (a key it does not
	// hold, the primary or last key) before the members are asked about:
	// "wait for them" would send the operator waiting for good.
	if err := kr.Refusal(req.Op, req.Key); err != nil {
		return err
	}
	if !force {
		if err := checkKeyringStep(req.Op, req.Key, s.b.Members()); err != nil {
			return err
		}
	}
	res, err := s.apply(c.Request().Context(), fsm.KeyringType, req)
	if err != nil {
		return err
	}
	setIndex(c, res.Index)
	return c.NoContent(http.StatusNoContent)
}

// keyringFromAPI checks the operation and decodes the base64 key.
func keyringFromAPI(in api.KeyringRequest) (fsm.KeyringRequest, error) {
	switch in.Op {
	case api.KeyringInstall, api.KeyringUse, api.KeyringRemove:
	default:
		return fsm.KeyringRequest{}, badRequest("op %q: want install, use or remove", in.Op)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(in.Key))
	if err != nil {
		return fsm.KeyringRequest{}, badRequest("key is not base64: %v", err)
	}
	if err := fsm.ValidGossipKey(key); err != nil {
		return fsm.KeyringRequest{}, err
	}
	return fsm.KeyringRequest{Op: in.Op, Key: key}, nil
}

// checkKeyringStep refuses a use before every live member has installed
// the key, and a remove while a live member still encrypts with it.
func checkKeyringStep(op string, key []byte, members []gossip.Member) error {
	fp := gossip.KeyFingerprint(key)
	var behind []string
	for _, m := range members {
		if !live(m) {
			continue
		}
		switch {
		case op == api.KeyringUse && !slices.Contains(m.Meta.Keyring, fp):
			behind = append(behind, m.Name)
		case op == api.KeyringRemove && len(m.Meta.Keyring) > 0 && m.Meta.Keyring[0] == fp:
			behind = append(behind, m.Name)
		}
	}
	if len(behind) == 0 {
		return nil
	}
	why := "have not installed key " + fp + " yet"
	if op == api.KeyringRemove {
		why = "still encrypt with key " + fp
	}
	return &httpError{status: http.StatusConflict, code: api.CodeConflict,
		message: fmt.Sprintf("%d live members %s (%s); wait for them, or force the change", len(behind), why, strings.Join(behind, ", "))}
}
