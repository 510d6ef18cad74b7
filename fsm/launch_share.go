package fsm

import (
	"reflect"

	"github.com/amserver/amserver/internal/rowstore"
)

// launchSharer points restored assignments back at their bundle job's
// launch. Apply makes an assignment share the launch it was made from
// (Assignment.Launch); a snapshot stores each copy, and restoring them as
// decoded would hold every launch twice. An assignment whose launch differs
// from its job's (a rollout still running an older generation) keeps its
// own. Bundles restore before assignments (Tables), and assignments come
// in id order, so consecutive ones share a bundle: one lookup serves them.
type launchSharer struct {
	txn    *rowstore.Txn
	id     string
	bundle *Bundle
}

func (s *launchSharer) share(a *Assignment) {
	if a.BundleID == "" || a.Launch == nil {
		return
	}
	if s.bundle == nil || s.id != a.BundleID {
		s.id, s.bundle = a.BundleID, nil
		if raw, err := s.txn.First(tableBundles, "id", a.BundleID); err == nil && raw != nil {
			s.bundle, _ = raw.(*Bundle)
		}
	}
	if s.bundle == nil {
		return
	}
	// Only an equal launch is shared, nil and empty told apart as the
	// digest tells them: sharing never changes what a row reads.
	if j := s.bundle.Spec.Job(a.Job); j != nil && reflect.DeepEqual(&j.Launch, a.Launch) {
		a.Launch = &j.Launch
	}
}
