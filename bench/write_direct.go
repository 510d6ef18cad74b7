package bench

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// directMeasurement is one c=1 window in which the single writer
// alternates between the leader and one follower, so that both medians
// come from the same seconds of the same machine and their difference is
// what the follower's forward hop adds.
type directMeasurement struct {
	leaderID, followerID string
	leader, follower     writeMeasurement // ops and p50 of the creates sent to each
}

// forwardAdds is the follower's p50 over the leader's.
func (d directMeasurement) forwardAdds() time.Duration { return d.follower.p50 - d.leader.p50 }

// roles returns the indexes of the leader and of the first follower.
func (a *amserverWrite) roles() (leader, follower int, err error) {
	leader, follower = -1, -1
	for i, s := range a.servers {
		switch {
		case s.Store().IsLeader():
			leader = i
		case follower < 0:
			follower = i
		}
	}
	if leader < 0 || follower < 0 {
		return 0, 0, errors.New("no leader and follower to send to")
	}
	return leader, follower, nil
}

// measureDirect runs one writer that sends its creates in turn to the
// leader and to a follower for warm-up and window, and keeps the two
// latencies apart. A leader change inside the window voids it.
func measureDirect(ctx context.Context, a *amserverWrite, warmup, window time.Duration, seq *atomic.Int64) (directMeasurement, error) {
	if err := a.prepare(1); err != nil {
		return directMeasurement{}, fmt.Errorf("prepare: %w", err)
	}
	li, fi, err := a.roles()
	if err != nil {
		return directMeasurement{}, err
	}
	d := directMeasurement{leaderID: a.servers[li].NodeID(), followerID: a.servers[fi].NodeID()}
	var lats [2][]time.Duration
	var errs [2]int64
	var firstErr error
	targets := [2]int{li, fi}
	warmEnd := time.Now().Add(warmup)
	end := warmEnd.Add(window)
	for i := 0; ctx.Err() == nil; i++ {
		began := time.Now()
		if began.After(end) {
			break
		}
		k := i % 2
		_, err := a.clients[targets[k]].CreateBundle(ctx, writeSpec(seq.Add(1)))
		if began.Before(warmEnd) {
			continue
		}
		if err != nil {
			errs[k]++
			firstErr = firstNonNil(firstErr, err)
			continue
		}
		lats[k] = append(lats[k], time.Since(began))
	}
	if err := ctx.Err(); err != nil {
		return d, fmt.Errorf("measurement interrupted: %w", err)
	}
	if l, _, err := a.roles(); err != nil || l != li {
		return d, fmt.Errorf("leadership moved away from %s during the window", d.leaderID)
	}
	for k, m := range []*writeMeasurement{&d.leader, &d.follower} {
		*m = writeMeasurement{ops: int64(len(lats[k])), errors: errs[k], elapsed: window, p50: median(lats[k]), firstErr: firstErr}
	}
	if d.leader.ops == 0 || d.follower.ops == 0 {
		return d, fmt.Errorf("no acknowledged creates on one side (first error: %w)", firstErr)
	}
	return d, nil
}

// firstNonNil keeps the first error seen.
func firstNonNil(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// measureDirectAmserver runs measureDirect on the amserver cluster, when
// it runs and has not failed.
func measureDirectAmserver(ctx context.Context, o Options, running []*runningWrite) (directMeasurement, error) {
	for _, r := range running {
		a, ok := r.t.(*amserverWrite)
		if !ok || r.failed || ctx.Err() != nil {
			continue
		}
		warmup, window := writeTiming(o)
		d, err := measureDirect(ctx, a, warmup, window, &r.seq)
		if err == nil {
			o.Logger.Info("measured direct", "leader p50", d.leader.p50, "follower p50", d.follower.p50)
		}
		return d, err
	}
	return directMeasurement{}, nil
}
