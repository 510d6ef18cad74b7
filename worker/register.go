package worker

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/gossip"
)

// refusalRepeat is how often a registration refusal is logged again while
// it lasts: an operator tailing the log meets it, and the retries every few
// seconds do not flood it.
const refusalRepeat = time.Minute

// registrationLog says how registering goes. Until it succeeds the worker
// polls nothing, so its node runs nothing: a refusal that retrying cannot
// fix is the operator's to act on and is an Error, repeated while it lasts;
// a transient failure (no leader, no answer) stays at Debug like every
// other retry.
type registrationLog struct {
	logger  *slog.Logger
	node    string // named in the fix
	now     func() time.Time
	since   time.Time // first refusal since the last success; zero: none
	code    string    // the refusal last logged
	at      time.Time // when it was logged
	retries int       // refusals since it was logged
}

// refused logs a failed registration and reports whether the servers
// refused it (as opposed to a failure that a later retry may get past).
func (r *registrationLog) refused(err error) bool {
	e, ok := refusal(err)
	if !ok {
		r.logger.Debug("registration failed, retrying", "err", err)
		return false
	}
	now := r.now()
	if r.since.IsZero() {
		r.since = now
	}
	if e.Code == r.code && now.Sub(r.at) < refusalRepeat {
		r.retries++
		r.logger.Debug("registration refused again", "err", err)
		return true
	}
	r.logger.Error("the servers refuse to register this node, so it runs nothing: retrying will not help until an operator acts",
		"err", err, "fix", refusalFix(e.Code, r.node), "refusedFor", now.Sub(r.since).Round(time.Second), "retriesSinceLastLog", r.retries)
	r.code, r.at, r.retries = e.Code, now, 0
	return true
}

// registered logs a success, saying so when it ends a refusal.
func (r *registrationLog) registered(server string) {
	if r.since.IsZero() {
		r.logger.Info("registered inventory", "server", server)
		return
	}
	r.logger.Info("registered inventory after it was refused", "server", server, "refusedFor", r.now().Sub(r.since).Round(time.Second))
	*r = registrationLog{logger: r.logger, node: r.node, now: r.now}
}

// advertiseRefused sets or clears the gossip tag that tells the leader the
// servers refuse this worker (gossip.TagRegistration), and reports whether
// the new metadata is in effect. A broadcast that outlives the wait still
// goes on, so only a refused update is reported as failed.
func (w *Worker) advertiseRefused(ctx context.Context, refused bool) bool {
	m := w.meta
	if refused {
		m.Tags = map[string]string{gossip.TagRegistration: gossip.RegistrationRefused}
	}
	uctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := w.gossip.UpdateMeta(uctx, m)
	if err != nil && !errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		w.logger.Warn("could not tell the cluster whether the servers refuse this worker", "refused", refused, "err", err)
		return false
	}
	return err == nil || errors.Is(err, context.DeadlineExceeded)
}

// refusal is err as the servers' answer when a retry of the same request
// cannot change it: any 4xx but a timeout or overload.
func refusal(err error) (*api.Error, bool) {
	var e *api.Error
	if !errors.As(err, &e) || e.Status < 400 || e.Status >= 500 {
		return nil, false
	}
	return e, e.Status != http.StatusRequestTimeout && e.Status != http.StatusTooManyRequests
}

// refusalFix tells the operator what ends a refusal.
func refusalFix(code, node string) string {
	switch code {
	case api.CodeConflict, api.CodeInUse:
		return "the node holds reservations this inventory does not cover (it is smaller, or in another pool): " +
			"restart the worker with at least the reserved inventory (amserver node status " + node + "), or move the work off " +
			"(amserver node drain " + node + ", and uncordon it once registered; or amserver node deregister --force " + node + "): " +
			"the worker retries and registers once its inventory fits"
	case api.CodeUnauthorized:
		return "the worker sends no token, or one the servers do not know: start it with a worker token for node " + node +
			" in AMSERVER_TOKEN (amserver acl token create --kind worker --node-id " + node + ")"
	case api.CodeForbidden:
		return "the worker's token may not register node " + node + ": give it a worker token bound to " + node +
			" (amserver acl token create --kind worker --node-id " + node + ")"
	}
	return "correct the worker's flags and restart it"
}
