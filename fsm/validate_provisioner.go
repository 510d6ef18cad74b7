package fsm

import "net/url"

// AdmitProvisioner checks what every server requires of a pool's
// provisioner (docs/provisioner.md): a webhook URL absolute http or https,
// with no credentials in it; a command whose program is named. It is admission only (the API calls it before
// proposing; ValidatePool, which Apply runs, does not), so pools an older
// server accepted still replay; a server refuses to call such a URL anyway,
// but stored, its credentials were shown to every reader of the pool.
func AdmitProvisioner(p *Pool) error {
	if p.Provisioner == nil {
		return nil
	}
	if c := p.Provisioner.Command; len(c) > 0 && c[0] == "" {
		return invalidf("pool provisioner command must name its program first")
	}
	if p.Provisioner.URL == "" {
		return nil
	}
	u, err := url.Parse(p.Provisioner.URL)
	switch {
	case err != nil || u.Host == "":
		return invalidf("pool provisioner url must be an absolute http or https URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return invalidf("pool provisioner url scheme %q: only http and https are called", u.Scheme)
	case u.User != nil:
		return invalidf("pool provisioner url must not carry credentials (user:password@); servers never send them")
	}
	return nil
}
