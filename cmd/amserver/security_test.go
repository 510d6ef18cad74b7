package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/gossip"
	"github.com/amserver/amserver/internal/certs"
)

func TestKeygen(t *testing.T) {
	seen := map[string]bool{}
	for range 2 {
		r := runEnv(t, map[string]string{}, "", "keygen")
		if r.code != exitOK {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(r.stdout))
		if err != nil || len(key) != 32 {
			t.Fatalf("keygen printed %q (%d bytes, %v)", r.stdout, len(key), err)
		}
		seen[string(key)] = true
	}
	if len(seen) != 2 {
		t.Error("two keygen runs printed the same key")
	}
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(raw)
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// makePKI runs the tls commands: a CA, a server and a client certificate.
func makePKI(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	ca, key := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem")
	for _, args := range [][]string{
		{"tls", "ca", "create", "--dir", dir, "--days", "2"},
		{"tls", "cert", "create", "--server", "--name", "10.0.0.5", "--name", "s1.example", "--ca", ca, "--ca-key", key, "--dir", dir},
		{"tls", "cert", "create", "--client", "--ca", ca, "--ca-key", key, "--dir", dir},
	} {
		if r := runEnv(t, map[string]string{}, "", args...); r.code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
	}
	return dir
}

func TestTLSCertificateCommands(t *testing.T) {
	dir := makePKI(t)
	srv := readCert(t, filepath.Join(dir, "server-0.pem"))
	if want := []string{certs.DefaultServerName, "localhost", "s1.example"}; !slices.Equal(srv.DNSNames, want) {
		t.Errorf("server DNS names %v, want %v", srv.DNSNames, want)
	}
	if len(srv.IPAddresses) != 2 || srv.IPAddresses[1].String() != "10.0.0.5" {
		t.Errorf("server IPs %v", srv.IPAddresses)
	}
	if cl := readCert(t, filepath.Join(dir, "client-0.pem")); len(cl.DNSNames) != 0 || len(cl.IPAddresses) != 0 {
		t.Errorf("client certificate carries names %v %v", cl.DNSNames, cl.IPAddresses)
	}
	for _, key := range []string{"ca-key.pem", "server-0-key.pem", "client-0-key.pem"} {
		info, err := os.Stat(filepath.Join(dir, key))
		if err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v", key, info.Mode().Perm(), err)
		}
	}
	ca, caKey := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-key.pem")
	failures := []struct {
		args []string
		code int
	}{
		{[]string{"tls", "cert", "create", "--server", "--client", "--ca", ca, "--ca-key", caKey}, exitUsage},
		{[]string{"tls", "cert", "create", "--ca", ca, "--ca-key", caKey}, exitUsage},
		{[]string{"tls", "cert", "create", "--client", "--ca", filepath.Join(dir, "nope.pem"), "--ca-key", caKey}, exitUsage},
		{[]string{"tls", "cert", "create", "--client", "--ca", filepath.Join(dir, "server-0.pem"), "--ca-key", filepath.Join(dir, "server-0-key.pem")}, exitUsage},
		{[]string{"tls", "ca", "create", "--dir", dir}, exitFailure}, // never overwrites a CA
		{[]string{"tls", "ca", "create", "--dir", t.TempDir(), "--days", "0"}, exitUsage},
	}
	for _, f := range failures {
		if r := runEnv(t, map[string]string{}, "", f.args...); r.code != f.code || r.stderr == "" {
			t.Errorf("%v: exit %d (want %d), stderr %q", f.args, r.code, f.code, r.stderr)
		}
	}
}

// TestClientTLS runs a client command against an HTTPS server that
// requires client certificates, with the TLS settings from flags or the
// environment.
func TestClientTLS(t *testing.T) {
	dir := makePKI(t)
	pool, err := certs.LoadPool(filepath.Join(dir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "server-0.pem"), filepath.Join(dir, "server-0-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, 1, sampleMembers())
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca, cert, key := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "client-0.pem"), filepath.Join(dir, "client-0-key.pem")

	r := runEnv(t, map[string]string{}, "", "members", "--address", srv.URL, "--ca-cert", ca, "--client-cert", cert, "--client-key", key)
	if r.code != exitOK {
		t.Fatalf("with flags: exit %d: %s", r.code, r.stderr)
	}
	env := map[string]string{envAddr: srv.URL, envCACert: ca, envClientCert: cert, envClientKey: key}
	if r := runEnv(t, env, "", "members"); r.code != exitOK {
		t.Fatalf("with the environment: exit %d: %s", r.code, r.stderr)
	}
	if r := runEnv(t, map[string]string{envAddr: srv.URL}, "", "members"); r.code != exitFailure || !strings.Contains(r.stderr, "cannot be verified") {
		t.Errorf("without the CA: exit %d, stderr %q", r.code, r.stderr)
	}
	// Each refusal says which setting to fix: the server's alert alone
	// ("tls: certificate required") and Go's "HTTP request to an HTTPS
	// server" answer named none.
	if r := runEnv(t, map[string]string{envAddr: srv.URL, envCACert: ca}, "", "members"); r.code != exitFailure ||
		!strings.Contains(r.stderr, "requires a client certificate") || !strings.Contains(r.stderr, "--client-cert") {
		t.Errorf("without a client certificate: exit %d, stderr %q", r.code, r.stderr)
	}
	plain := "http://" + strings.TrimPrefix(srv.URL, "https://")
	if r := runEnv(t, map[string]string{envAddr: plain, envCACert: ca}, "", "members"); r.code == exitOK ||
		!strings.Contains(r.stderr, "speaks HTTPS: use an https:// address") {
		t.Errorf("plain HTTP to an HTTPS server: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := runEnv(t, map[string]string{envAddr: srv.URL, envCACert: ca, envClientCert: cert}, "", "members"); r.code != exitUsage {
		t.Errorf("a certificate without its key: exit %d", r.code)
	}
}

func TestKeyringCommands(t *testing.T) {
	k1 := strings.Repeat("A", 43) + "="
	raw, _ := base64.StdEncoding.DecodeString(k1)
	fp := gossip.KeyFingerprint(raw)
	f := newFake(t)
	f.reply("GET /v1/operator/keyring", http.StatusOK, api.Keyring{
		Keys: []api.KeyringKey{{Fingerprint: fp, Primary: true, Installed: 2, PrimaryOn: 2}},
		Members: []api.KeyringMember{
			{Name: "s1", Role: "server", Status: "alive", Primary: fp, Keys: []string{fp}, Converged: true},
			{Name: "w1", Role: "worker", Status: "alive", Primary: fp, Keys: []string{fp}, Converged: true},
		},
	})
	f.on("POST /v1/operator/keyring", func(w http.ResponseWriter, r *http.Request) {
		var in api.KeyringRequest
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			writeError(w, http.StatusBadRequest, api.CodeBadRequest, err.Error())
			return
		}
		if in.Op == api.KeyringUse && r.URL.Query().Get("force") == "" {
			writeError(w, http.StatusConflict, api.CodeConflict, "1 live members have not installed key "+fp+" yet (w1); wait for them, or force the change")
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	r := runCLI(t, f.srv.URL, "", "keyring", "list")
	if r.code != exitOK {
		t.Fatalf("list: exit %d: %s", r.code, r.stderr)
	}
	if got := cell(t, r.stdout, "INSTALLED", fp); got != "2/2" {
		t.Errorf("INSTALLED %q\n%s", got, r.stdout)
	}
	if got := cell(t, r.stdout, "CONVERGED", "w1"); got != "yes" {
		t.Errorf("CONVERGED %q\n%s", got, r.stdout)
	}
	if f.last("GET", "/v1/operator/keyring").query["keys"] != nil {
		t.Error("list asked for the keys without --keys")
	}
	runCLI(t, f.srv.URL, "", "keyring", "list", "--keys")
	if f.last("GET", "/v1/operator/keyring").query["keys"] == nil {
		t.Error("list --keys did not ask for the keys")
	}

	if r := runCLI(t, f.srv.URL, "", "keyring", "install", k1); r.code != exitOK || !strings.Contains(r.stdout, fp) {
		t.Fatalf("install: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	var sent api.KeyringRequest
	if err := json.Unmarshal(f.last("POST", "/v1/operator/keyring").body, &sent); err != nil || sent != (api.KeyringRequest{Op: "install", Key: k1}) {
		t.Errorf("install sent %+v (%v)", sent, err)
	}
	if r := runCLI(t, f.srv.URL, "", "keyring", "use", k1); r.code != exitConflict || !strings.Contains(r.stderr, "w1") {
		t.Errorf("use before convergence: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := runCLI(t, f.srv.URL, "", "keyring", "use", k1, "--force"); r.code != exitOK {
		t.Errorf("use --force: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := runCLI(t, f.srv.URL, "", "keyring", "remove", "not base64!"); r.code != exitUsage {
		t.Errorf("a key that is not base64: exit %d", r.code)
	}
}

func TestAgentSecurityFlags(t *testing.T) {
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	dir := t.TempDir()
	conf := filepath.Join(dir, "agent.yaml")
	yaml := "encrypt: " + key + "\ntls-cert: c.pem\ntls-key: k.pem\ntls-ca: ca.pem\ntls-verify-incoming: true\ntls-server-name: server.eu.amserver\n"
	if err := os.WriteFile(conf, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	f := &agentFlags{}
	cmd := newAgentCmdFor(f)
	if err := cmd.ParseFlags([]string{"--server", "--data-dir", dir, "--bind", "127.0.0.1", "--config", conf}); err != nil {
		t.Fatal(err)
	}
	if err := applyConfigFile(cmd, conf); err != nil {
		t.Fatal(err)
	}
	cfg, err := f.serverConfig(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if string(cfg.Gossip.SecretKey) != "0123456789abcdef" {
		t.Errorf("gossip key %q", cfg.Gossip.SecretKey)
	}
	want := certs.Files{CertFile: "c.pem", KeyFile: "k.pem", CAFile: "ca.pem", VerifyIncoming: true, ServerName: "server.eu.amserver"}
	if cfg.TLS != want {
		t.Errorf("TLS %+v, want %+v", cfg.TLS, want)
	}
	for _, bad := range [][]string{
		{"--encrypt", "c2hvcnQ="}, // 5 bytes
		{"--encrypt", "%%%"},      // not base64
		{"--tls-cert", "c.pem"},   // without key and CA
		{"--tls-verify-incoming"}, // without certificates
	} {
		f := &agentFlags{}
		cmd := newAgentCmdFor(f)
		if err := cmd.ParseFlags(append([]string{"--server", "--data-dir", dir, "--bind", "127.0.0.1"}, bad...)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.serverConfig(slog.New(slog.DiscardHandler)); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestHeapHeadroomFlag(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args []string
		ok   bool
	}{
		{nil, true},
		{[]string{"--heap-headroom-mib", "0"}, true},
		{[]string{"--heap-headroom-mib", "512"}, true},
		{[]string{"--heap-headroom-mib", "1073741824"}, true},
		{[]string{"--heap-headroom-mib", "-1"}, false},
		{[]string{"--heap-headroom-mib", "1073741825"}, false},
	}
	for _, tt := range tests {
		f := &agentFlags{}
		cmd := newAgentCmdFor(f)
		if err := cmd.ParseFlags(append([]string{"--server", "--data-dir", dir, "--bind", "127.0.0.1"}, tt.args...)); err != nil {
			t.Fatal(err)
		}
		_, err := f.serverConfig(slog.New(slog.DiscardHandler))
		if (err == nil) != tt.ok {
			t.Errorf("%v: err %v, want ok=%v", tt.args, err, tt.ok)
		}
	}
}
