package api

// Gossip keyring operations (KeyringRequest.Op).
const (
	KeyringInstall = "install"
	KeyringUse     = "use"
	KeyringRemove  = "remove"
)

// Keyring answers GET /v1/operator/keyring: the replicated gossip keyring
// and how far each member has applied it, as the answering server's gossip
// view shows. Keys are named by fingerprint (the first 8 bytes of their
// SHA-256, hex); the key material itself only with ?keys=true.
type Keyring struct {
	Keys    []KeyringKey    `json:"keys"`
	Members []KeyringMember `json:"members"`
}

// KeyringKey is one installed key.
type KeyringKey struct {
	Fingerprint string `json:"fingerprint"`
	Primary     bool   `json:"primary"`
	// Key is the base64 key, present only with ?keys=true.
	Key string `json:"key,omitempty"`
	// Installed counts the live members that report having the key;
	// PrimaryOn those that encrypt with it.
	Installed int `json:"installed"`
	PrimaryOn int `json:"primaryOn"`
}

// KeyringMember is one gossip member's keyring as it reports it.
type KeyringMember struct {
	Name   string `json:"name"`
	Role   string `json:"role"`
	Status string `json:"status"`
	// Primary is the fingerprint of the key it encrypts with ("" when it
	// does not encrypt); Keys every fingerprint it has installed.
	Primary string   `json:"primary,omitempty"`
	Keys    []string `json:"keys"`
	// Converged: it holds exactly the replicated keys and primary.
	Converged bool `json:"converged"`
}

// KeyringRequest is the body of POST /v1/operator/keyring.
type KeyringRequest struct {
	Op  string `json:"op"`  // install | use | remove
	Key string `json:"key"` // base64, 16, 24 or 32 bytes once decoded
}
