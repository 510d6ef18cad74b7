package api

import "time"

// ACL token kinds (DESIGN §9).
const (
	ACLManagement = "management"
	ACLWrite      = "write"
	ACLRead       = "read"
	ACLWorker     = "worker"
)

// ACLToken describes a token. Its secret is never part of it: the server
// keeps only the secret's hash and shows the secret once, at creation.
type ACLToken struct {
	AccessorID  string    `json:"accessorId"`
	Kind        string    `json:"kind"`
	NodeID      string    `json:"nodeId,omitempty"`
	Description string    `json:"description,omitempty"`
	CreateTime  time.Time `json:"createTime"`
	CreateIndex uint64    `json:"createIndex"`
	ModifyIndex uint64    `json:"modifyIndex"`
}

// ACLTokenRequest is the body of POST /v1/acl/tokens. SecretID is optional:
// without it the server generates one; with it, deployments can provision
// a secret they already distributed (at least 16 bytes).
type ACLTokenRequest struct {
	Kind        string `json:"kind"`
	NodeID      string `json:"nodeId,omitempty"`
	Description string `json:"description,omitempty"`
	SecretID    string `json:"secretId,omitempty"`
}

// ACLTokenCreated answers a create: the token and, this once, its secret.
type ACLTokenCreated struct {
	Token    ACLToken `json:"token"`
	SecretID string   `json:"secretId"`
}
