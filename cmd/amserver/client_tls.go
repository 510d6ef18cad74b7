package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/certs"
)

// Environment of the client's TLS settings (the flags win).
const (
	envCACert        = "AMSERVER_CACERT"
	envClientCert    = "AMSERVER_CLIENT_CERT"
	envClientKey     = "AMSERVER_CLIENT_KEY"
	envTLSServerName = "AMSERVER_TLS_SERVER_NAME"
)

// clientTLS are the client commands' TLS flags.
type clientTLS struct {
	caCert, clientCert, clientKey string
}

func (t *clientTLS) register(f *pflag.FlagSet) {
	f.StringVar(&t.caCert, "ca-cert", "", "CA certificate(s) to verify an https server with (env "+envCACert+"; default: the system's)")
	f.StringVar(&t.clientCert, "client-cert", "", "client certificate for servers that require one (env "+envClientCert+")")
	f.StringVar(&t.clientKey, "client-key", "", "key of --client-cert (env "+envClientKey+")")
}

// tlsConfig is the client's TLS configuration; nil when nothing is set, so
// that an https address is verified against the system's CAs. The server's
// certificate is checked against the host of the address, or against
// AMSERVER_TLS_SERVER_NAME (e.g. server.amserver) when the address is an IP
// the certificate does not name.
func (a *app) tlsConfig(cmd *cobra.Command) (*tls.Config, error) {
	ca := a.flagOrEnv(cmd, "ca-cert", a.tls.caCert, envCACert)
	cert := a.flagOrEnv(cmd, "client-cert", a.tls.clientCert, envClientCert)
	key := a.flagOrEnv(cmd, "client-key", a.tls.clientKey, envClientKey)
	name := a.env(envTLSServerName)
	if ca == "" && cert == "" && key == "" && name == "" {
		return nil, nil
	}
	if (cert == "") != (key == "") {
		return nil, usagef("--client-cert and --client-key go together")
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: name}
	if ca != "" {
		pool, err := certs.LoadPool(ca)
		if err != nil {
			return nil, usageError{err: fmt.Errorf("--ca-cert: %w", err)}
		}
		tc.RootCAs = pool
	}
	if cert != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, usageError{err: fmt.Errorf("--client-cert: %w", err)}
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

func (a *app) flagOrEnv(cmd *cobra.Command, flag, value, env string) string {
	if v := a.env(env); v != "" && !cmd.Flags().Changed(flag) {
		return v
	}
	return value
}

// describeTLS explains a refused certificate, ours or the server's; ""
// when err is not one.
func (a *app) describeTLS(err error) string {
	var (
		cv *tls.CertificateVerificationError
		op *net.OpError
		e  *api.Error
	)
	switch {
	case errors.As(err, &cv):
		return fmt.Sprintf("the certificate of the server at %s cannot be verified (%v); pass the cluster's CA with --ca-cert or %s",
			a.serverAddr, cv.Err, envCACert)
	case errors.As(err, &op) && op.Op == "remote error": // crypto/tls: an alert the server sent
		// The server's alert is all a client learns ("tls: certificate
		// required"): say which of our settings it is about.
		return fmt.Sprintf("the server at %s refused this client's certificate or its absence (%v); it requires a client "+
			"certificate of the cluster's CA: pass --client-cert and --client-key or %s and %s", a.serverAddr, op.Err, envClientCert, envClientKey)
	case errors.As(err, &e) && e.Status == http.StatusBadRequest && strings.Contains(e.Message, "HTTP request to an HTTPS server"):
		return fmt.Sprintf("the server at %s speaks HTTPS: use an https:// address (--address or %s), with the cluster's CA (--ca-cert or %s)",
			a.serverAddr, envAddr, envCACert)
	}
	return ""
}
