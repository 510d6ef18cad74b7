package elastic

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"

	"github.com/amserver/amserver/fsm"
)

// Policy is what this server's operator lets pools' provisioners do. Anyone
// with a write token can set a pool's provisioner, and the leader makes the
// calls with its own network position and privileges, so nothing is called
// that the operator did not allow: commands only with AllowExec, webhooks
// only to hosts on AllowHosts, never through a redirect, and never to a
// loopback, link-local or cloud metadata address unless an allowed IP or
// CIDR names it (request forgery, issue: hardening).
type Policy struct {
	AllowExec bool
	// AllowHosts are the host patterns a webhook's URL must match:
	// "host", "host:port", "*.example.com", an IP, or a CIDR. Empty: no
	// webhook may be called.
	AllowHosts []string
}

// Problem says why a pool's provisioner cannot be called ("" when it can).
func (p Policy) Problem(pr *fsm.Provisioner) string {
	switch {
	case pr == nil || (pr.URL == "" && len(pr.Command) == 0):
		return "has no provisioner"
	case pr.URL == "" && !p.AllowExec:
		return "has a command provisioner, which these servers do not run (start them with --elastic-allow-exec)"
	case pr.URL == "":
		return ""
	}
	u, err := url.Parse(pr.URL)
	switch {
	case err != nil || u.Host == "":
		return "has a provisioner URL that is not an absolute URL"
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("has a provisioner URL with scheme %q; only http and https are called", u.Scheme)
	case u.User != nil:
		return "has a provisioner URL with credentials in it, which these servers do not send"
	case !p.hostAllowed(u):
		return fmt.Sprintf("has a provisioner at %s, which is not on these servers' --provisioner-allow list", u.Host)
	}
	return ""
}

// hostAllowed matches the URL's host (and port) against AllowHosts.
func (p Policy) hostAllowed(u *url.URL) bool {
	host, port := strings.ToLower(u.Hostname()), u.Port()
	addr, err := netip.ParseAddr(host)
	isIP := err == nil
	for _, pat := range p.AllowHosts {
		pat = strings.ToLower(strings.TrimSpace(pat))
		if pfx, err := netip.ParsePrefix(pat); err == nil {
			if isIP && pfx.Contains(addr.Unmap()) {
				return true
			}
			continue
		}
		ph, pp := pat, ""
		if h, p2, err := net.SplitHostPort(pat); err == nil {
			ph, pp = h, p2
		}
		if pp != "" && pp != port {
			continue
		}
		if ph == host || (strings.HasPrefix(ph, "*.") && strings.HasSuffix(host, ph[1:])) {
			return true
		}
	}
	return false
}

// listedIP reports whether an allowed IP or CIDR names ip explicitly.
func (p Policy) listedIP(ip netip.Addr) bool {
	for _, pat := range p.AllowHosts {
		pat = strings.TrimSpace(pat)
		if h, _, err := net.SplitHostPort(pat); err == nil {
			pat = h
		}
		if a, err := netip.ParseAddr(pat); err == nil && a.Unmap() == ip {
			return true
		}
		if pfx, err := netip.ParsePrefix(pat); err == nil && pfx.Contains(ip) {
			return true
		}
	}
	return false
}

// metadataAddrs are cloud instance-metadata endpoints outside link-local.
var metadataAddrs = []netip.Addr{netip.MustParseAddr("fd00:ec2::254")}

// sensitive reports whether ip is an address a webhook must not reach
// unless listed: loopback, link-local (169.254.169.254 among them),
// unspecified, multicast, or a metadata endpoint.
func sensitive(ip netip.Addr) bool {
	if ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified() || ip.IsMulticast() {
		return true
	}
	for _, m := range metadataAddrs {
		if ip == m {
			return true
		}
	}
	return false
}

// client is the webhook client: dials are checked against the policy
// after name resolution (so a name cannot resolve its way to a forbidden
// address), redirects are answers rather than instructions, and no
// environment proxy stands in between.
func (p Policy) client(timeout time.Duration) *http.Client {
	d := &net.Dialer{Timeout: min(timeout, 10*time.Second), Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("provisioner address %s: %w", address, err)
		}
		if ip := ap.Addr().Unmap(); sensitive(ip) && !p.listedIP(ip) {
			return fmt.Errorf("provisioner address %s is loopback, link-local or metadata, and not on --provisioner-allow", ip)
		}
		return nil
	}}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         func(ctx context.Context, n, a string) (net.Conn, error) { return d.DialContext(ctx, n, a) },
			TLSHandshakeTimeout: 10 * time.Second,
			MaxIdleConnsPerHost: callsPerPool,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
