package main

import (
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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

// describeTLS explains a refused certificate; "" when err is not one.
func (a *app) describeTLS(err error) string {
	var cv *tls.CertificateVerificationError
	if !errors.As(err, &cv) {
		return ""
	}
	return fmt.Sprintf("the certificate of the server at %s cannot be verified (%v); pass the cluster's CA with --ca-cert or %s",
		a.serverAddr, cv.Err, envCACert)
}
