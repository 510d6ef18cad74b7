package fsm

import "github.com/amserver/amserver/api"

// RestartPolicy is a batch bundle's answer to a non-zero exit.
type RestartPolicy struct {
	Attempts int    `json:"attempts" row:"1"`
	Delay    int64  `json:"delay,omitempty" unit:"duration" row:"2"`
	Mode     string `json:"mode,omitempty" row:"3,intern"`
}

// Bundle kinds and restart modes (DESIGN §2.3). The state stores the
// default kind as "" (Normalize), so specs stored before kinds existed
// compare equal to new ones.
const (
	KindResilient = api.KindResilient
	KindService   = api.KindService
	KindBatch     = api.KindBatch
	RestartFail   = api.RestartFail
	RestartDelay  = api.RestartDelay
)

// IsService and IsBatch name the kind.
func (s *BundleSpec) IsService() bool { return s.Kind == KindService }
func (s *BundleSpec) IsBatch() bool   { return s.Kind == KindBatch }

// KindName is the kind as the API shows it.
func (s *BundleSpec) KindName() string {
	if s.Kind == "" {
		return KindResilient
	}
	return s.Kind
}
