package main

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/amserver/amserver/internal/certs"
)

// securityFlags are the agent's TLS and gossip encryption flags (issue 9).
type securityFlags struct {
	tlsCert, tlsKey, tlsCA string
	tlsVerifyIncoming      bool
	tlsServerName          string
	encrypt                string
}

func (s *securityFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&s.tlsCert, "tls-cert", "", "certificate (PEM): a server serves HTTPS only and speaks mutual TLS on Raft; a worker presents it to the API")
	fl.StringVar(&s.tlsKey, "tls-key", "", "key of --tls-cert (PEM)")
	fl.StringVar(&s.tlsCA, "tls-ca", "", "CA bundle (PEM) that peers' certificates must chain to; a worker with it talks HTTPS to the servers")
	fl.BoolVar(&s.tlsVerifyIncoming, "tls-verify-incoming", false, "server: require a client certificate of the CA on the HTTP API")
	fl.StringVar(&s.tlsServerName, "tls-server-name", certs.DefaultServerName, "DNS name every server certificate carries and servers and workers require of servers")
	fl.StringVar(&s.encrypt, "encrypt", "", "gossip encryption key, base64 of 16, 24 or 32 bytes (see 'amserver keygen'); on servers it only seeds the replicated keyring")
}

func (s *securityFlags) tlsFiles() certs.Files {
	return certs.Files{
		CertFile: s.tlsCert, KeyFile: s.tlsKey, CAFile: s.tlsCA,
		VerifyIncoming: s.tlsVerifyIncoming, ServerName: s.tlsServerName,
	}
}

// checkServer refuses a partial TLS setup on a server: it needs all three
// files or none.
func (s *securityFlags) checkServer() error {
	set := 0
	for _, v := range []string{s.tlsCert, s.tlsKey, s.tlsCA} {
		if v != "" {
			set++
		}
	}
	if set != 0 && set != 3 {
		return fmt.Errorf("TLS on a server needs --tls-cert, --tls-key and --tls-ca together")
	}
	if s.tlsVerifyIncoming && set == 0 {
		return fmt.Errorf("--tls-verify-incoming needs --tls-cert, --tls-key and --tls-ca")
	}
	return nil
}

// gossipKey decodes --encrypt; nil when it is not set.
func (s *securityFlags) gossipKey() ([]byte, error) {
	if s.encrypt == "" {
		return nil, nil
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s.encrypt))
	if err != nil {
		return nil, fmt.Errorf("--encrypt is not base64: %w", err)
	}
	switch len(key) {
	case 16, 24, 32:
		return key, nil
	}
	return nil, fmt.Errorf("--encrypt must decode to 16, 24 or 32 bytes, got %d", len(key))
}
