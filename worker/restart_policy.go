package worker

import (
	"time"

	"github.com/amserver/amserver/internal/backoff"
)

// The restart policy every driver applies to a workload of a service (not
// a batch job, api.Assignment.RunOnce) that ends: it is started again after
// a capped backoff, and reads failed from its end until a new run has
// stayed up stableAfter. The drivers differ only in how they start a run
// and notice its end (a child's Wait, a module's return, a container's
// state in a scan); when to start and what to report is decided here.
const (
	restartMin = time.Second      // the first restart's delay
	restartMax = 30 * time.Second // the delay doubles up to this
	// restartReset: a run that lasted this long was no crash loop; the
	// next restart's delay starts from restartMin again.
	restartReset = time.Minute
	// defaultStableAfter: a run that follows an end reads running once it
	// has stayed up this long. A crash loop's brief starts are not
	// running, or each would count its replica available and let a
	// service's rollout take down the next (DESIGN §4.2).
	defaultStableAfter = 5 * time.Second
)

// restartPolicy follows one task's runs. It reads the time through now,
// so that its tests need no sleeps; it is not safe for concurrent use (its
// driver guards it).
type restartPolicy struct {
	now         func() time.Time
	stableAfter time.Duration
	delays      *backoff.Backoff
	since       time.Time // the current run's start; zero when none runs or it is unknown (adopted)
	afterEnd    bool      // the current run follows an end: it reads running only once stable
}

func newRestartPolicy(now func() time.Time, stableAfter time.Duration) *restartPolicy {
	return &restartPolicy{now: now, stableAfter: stableAfter, delays: backoff.New(restartMin, restartMax)}
}

// started records that a run starts now.
func (p *restartPolicy) started() { p.since = p.now() }

// seenRunning records a run found up whose start the driver did not make
// or see (an adopted container, one Docker or an operator started): it
// counts from now.
func (p *restartPolicy) seenRunning() {
	if p.since.IsZero() {
		p.since = p.now()
	}
}

// ended records that the current run ended now and returns how long to
// wait before the next start: restartMin after a run of restartReset or
// more, else double the last delay, up to restartMax.
func (p *restartPolicy) ended() time.Duration {
	if !p.since.IsZero() && p.now().Sub(p.since) >= restartReset {
		p.delays.Reset()
	}
	p.since, p.afterEnd = time.Time{}, true
	return p.delays.Next()
}

// untilRunning is how long the current run has yet to stay up before it
// reads running: 0 for a first run (nothing ended before it) or a run up
// for stableAfter; stableAfter while no run has started since an end.
func (p *restartPolicy) untilRunning() time.Duration {
	switch {
	case !p.afterEnd:
		return 0
	case p.since.IsZero():
		return p.stableAfter
	}
	return max(0, p.stableAfter-p.now().Sub(p.since))
}

// markWhenStable calls mark once the run started now reads running: at
// once, or after untilRunning unless ended closes first. The returned
// wait returns once mark has been called or never will be, so that a
// run's end is reported after its start, never before.
func (p *restartPolicy) markWhenStable(ended <-chan struct{}, mark func()) (wait func()) {
	after := p.untilRunning()
	if after == 0 {
		mark()
		return func() {}
	}
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		stable := time.NewTimer(after)
		defer stable.Stop()
		select {
		case <-stable.C:
			mark()
		case <-ended:
		}
	}()
	return func() { <-watched }
}
