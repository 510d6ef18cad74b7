package main

import (
	"errors"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/amserver/amserver/internal/certs"
)

func newTLSCmd(a *app) *cobra.Command {
	cmd := makeGroup(&cobra.Command{
		Use:   "tls",
		Short: "Create a CA and the certificates of servers, workers and clients",
	})
	ca := makeGroup(&cobra.Command{Use: "ca", Short: "Certificate authority"})
	ca.AddCommand(newTLSCACreateCmd(a))
	cert := makeGroup(&cobra.Command{Use: "cert", Short: "Server and client certificates"})
	cert.AddCommand(newTLSCertCreateCmd(a))
	cmd.AddCommand(ca, cert)
	return cmd
}

func newTLSCACreateCmd(a *app) *cobra.Command {
	var dir string
	var days int
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create an ECDSA P-256 CA: ca.pem and ca-key.pem (keep the key offline)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if days <= 0 {
				return usagef("--days must be positive")
			}
			p, err := certs.NewCA(days, time.Now())
			if err != nil {
				return err
			}
			certPath, keyPath, err := p.Write(dir, certs.CAFile, certs.CAKeyFile)
			if err != nil {
				return err
			}
			return a.emit(cmd.OutOrStdout(), writtenJSON{Cert: certPath, Key: keyPath}, line("wrote %s and %s", certPath, keyPath))
		},
	}
	cmd.Flags().StringVar(&dir, "dir", ".", "directory to write into")
	cmd.Flags().IntVar(&days, "days", 5*365, "validity in days")
	return cmd
}

type certFlags struct {
	server, client    bool
	names             []string
	serverName        string
	caFile, caKeyFile string
	dir               string
	days              int
	app               *app // for the output format
}

// writtenJSON is what --json prints for a command that writes a
// certificate and its key.
type writtenJSON struct {
	Cert string `json:"cert"`
	Key  string `json:"key"`
	CA   string `json:"ca,omitempty"`
}

func newTLSCertCreateCmd(a *app) *cobra.Command {
	f := &certFlags{app: a}
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a server (--server) or client (--client) certificate signed by the CA",
		Long: `A server certificate carries the DNS name that Raft peers require of each other
(--server-name, default server.amserver; servers run with the same
--tls-server-name), localhost, 127.0.0.1 and every --name. A client
certificate (workers, operators' CLI) has no server name, so it cannot pose as
a server. Files are written as server-N.pem / server-N-key.pem (client-N...)
with the first free N; keys are written 0600.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.create(cmd) },
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.server, "server", false, "a server certificate")
	fl.BoolVar(&f.client, "client", false, "a client certificate")
	fl.StringArrayVar(&f.names, "name", nil, "an extra DNS name or IP address for the certificate (repeatable)")
	fl.StringVar(&f.serverName, "server-name", certs.DefaultServerName, "the DNS name that marks server certificates")
	fl.StringVar(&f.caFile, "ca", certs.CAFile, "CA certificate")
	fl.StringVar(&f.caKeyFile, "ca-key", certs.CAKeyFile, "CA key")
	fl.StringVar(&f.dir, "dir", ".", "directory to write into")
	fl.IntVar(&f.days, "days", 365, "validity in days")
	return cmd
}

func (f *certFlags) create(cmd *cobra.Command) error {
	if f.server == f.client {
		return usageError{err: errors.New("choose exactly one of --server and --client"), cmdPath: cmd.CommandPath()}
	}
	if f.days <= 0 {
		return usagef("--days must be positive")
	}
	ca, err := certs.LoadAuthority(f.caFile, f.caKeyFile)
	if err != nil {
		return usageError{err: err}
	}
	p, err := ca.Issue(certs.Request{Server: f.server, ServerName: f.serverName, Names: f.names, Days: f.days}, time.Now())
	if err != nil {
		return usageError{err: err}
	}
	prefix := "client"
	if f.server {
		prefix = "server"
	}
	certPath, keyPath, err := p.WriteNumbered(f.dir, prefix)
	if err != nil {
		return err
	}
	caFile := filepath.Clean(f.caFile)
	return f.app.emit(cmd.OutOrStdout(), writtenJSON{Cert: certPath, Key: keyPath, CA: caFile},
		line("wrote %s and %s (CA %s)", certPath, keyPath, caFile))
}
