package fsm

import "net/url"

// AdmitProvisionerURL checks what every server requires of a webhook
// provisioner's URL (docs/provisioner.md): absolute http or https, with no
// credentials in it. It is admission only (the API calls it before
// proposing; ValidatePool, which Apply runs, does not), so pools an older
// server accepted still replay; a server refuses to call such a URL anyway,
// but stored, its credentials were shown to every reader of the pool.
func AdmitProvisionerURL(p *Pool) error {
	if p.Provisioner == nil || p.Provisioner.URL == "" {
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
