package fsm

import (
	"encoding/hex"
	"fmt"
)

// tableACLTokens holds ACL tokens (DESIGN §9). Only a token's SHA-256 is
// replicated: the Raft log, snapshots and every replica never hold a secret.
const tableACLTokens = "acl_tokens"

// ACL token kinds, from most to least privileged; a worker token is bound to
// one node and reaches only that node's own endpoints.
const (
	ACLManagement = "management"
	ACLWrite      = "write"
	ACLRead       = "read"
	ACLWorker     = "worker"
)

// maxACLField bounds an accessor id, a node id or a description.
const maxACLField = 256

// ACLToken is one replicated token.
type ACLToken struct {
	AccessorID string
	// SecretHash is the hex SHA-256 of the secret the client sends.
	SecretHash  string `api:"-"`
	Kind        string
	NodeID      string
	Description string
	// CreateTime is the leader's clock at creation (unix nanoseconds).
	CreateTime  int64 `unit:"instant"`
	CreateIndex uint64
	ModifyIndex uint64
}

// UpsertACLTokenRequest creates a token or replaces one with the same
// accessor id.
type UpsertACLTokenRequest struct {
	Token ACLToken
}

// DeleteACLTokenRequest deletes a token by accessor id.
type DeleteACLTokenRequest struct {
	AccessorID string
}

// ValidateACLToken checks a token's fields; the API calls it before
// proposing, Apply again before writing.
func ValidateACLToken(tok *ACLToken) error {
	switch {
	case tok.AccessorID == "" || len(tok.AccessorID) > maxACLField:
		return fmt.Errorf("%w: accessor id must be 1 to %d bytes", ErrInvalid, maxACLField)
	case len(tok.Description) > maxACLField:
		return fmt.Errorf("%w: description is over %d bytes", ErrInvalid, maxACLField)
	case !isSHA256Hex(tok.SecretHash):
		return fmt.Errorf("%w: secret hash must be 64 lowercase hex digits", ErrInvalid)
	}
	switch tok.Kind {
	case ACLManagement, ACLWrite, ACLRead:
		if tok.NodeID != "" {
			return fmt.Errorf("%w: only a worker token names a node", ErrInvalid)
		}
	case ACLWorker:
		if tok.NodeID == "" || len(tok.NodeID) > maxACLField {
			return fmt.Errorf("%w: a worker token must name its node (1 to %d bytes)", ErrInvalid, maxACLField)
		}
	default:
		return fmt.Errorf("%w: token kind %q: want management, write, read or worker", ErrInvalid, tok.Kind)
	}
	return nil
}

func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	b, err := hex.DecodeString(s)
	return err == nil && hex.EncodeToString(b) == s
}

func (f *FSM) applyUpsertACLToken(t *tx, req *UpsertACLTokenRequest) (any, error) {
	tok := req.Token
	if err := ValidateACLToken(&tok); err != nil {
		return nil, err
	}
	if other := t.ACLTokenBySecretHash(tok.SecretHash); other != nil && other.AccessorID != tok.AccessorID {
		return nil, fmt.Errorf("%w: another token has this secret", ErrExists)
	}
	tok.CreateIndex = t.index
	if old := t.ACLToken(tok.AccessorID); old != nil {
		tok.CreateIndex, tok.CreateTime = old.CreateIndex, old.CreateTime
	}
	tok.ModifyIndex = t.index
	t.insert(tableACLTokens, &tok)
	return &tok, nil
}

func (f *FSM) applyDeleteACLToken(t *tx, req *DeleteACLTokenRequest) (any, error) {
	tok := t.ACLToken(req.AccessorID)
	if tok == nil {
		return nil, fmt.Errorf("acl token %s: %w", req.AccessorID, ErrNotFound)
	}
	t.delete(tableACLTokens, tok)
	return nil, nil
}

// ACLToken returns a token by accessor id, or nil.
func (s *State) ACLToken(accessorID string) *ACLToken {
	return first[ACLToken](s.txn, tableACLTokens, "id", accessorID)
}

// ACLTokenBySecretHash returns the token whose secret hashes to hash, or nil.
func (s *State) ACLTokenBySecretHash(hash string) *ACLToken {
	return first[ACLToken](s.txn, tableACLTokens, "secret", hash)
}

// ACLTokens lists every token in accessor order.
func (s *State) ACLTokens() []*ACLToken { return all[ACLToken](s.txn, tableACLTokens, "id") }
