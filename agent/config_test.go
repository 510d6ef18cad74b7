package agent

import (
	"testing"

	"github.com/amserver/amserver/fsm"
)

func TestACLConfigRejectsBadTokens(t *testing.T) {
	const secret = "management-secret-for-tests" // long enough: only the field named is wrong
	cases := map[string]ConfigToken{
		"short secret":        {Secret: "short", Kind: fsm.ACLManagement},
		"unknown kind":        {Secret: secret, Kind: "root"},
		"worker without node": {Secret: secret, Kind: fsm.ACLWorker},
	}
	for name, tok := range cases {
		cfg := Config{NodeID: "s1", ACL: ACLConfig{Enabled: true, Tokens: []ConfigToken{tok}}}
		if err := cfg.setDefaults(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
