package bench

import (
	"fmt"
	"slices"
	"time"
)

// stLoadCounts is what the write load saw over the trials: acknowledged
// writes and failed ones by kind.
type stLoadCounts interface {
	counts() (ok int64, failed map[string]int64)
}

// stResults turns samples into rows: p50, p99 (nearest rank) and max of
// each timing, the exit's goal on its max (every exit must meet it), and
// how many leader SIGTERMs handed leadership over.
func stResults(plan SigtermPlan, samples []stSample, load stLoadCounts) []Result {
	if len(samples) == 0 {
		return nil
	}
	ok, failed := load.counts()
	note := fmt.Sprintf("%d server processes on loopback, %d writes/s to each; %d trials", plan.Servers, plan.WriteRate, len(samples))
	var leaders, followers []stSample
	for _, s := range samples {
		if s.leader {
			leaders = append(leaders, s)
		} else {
			followers = append(followers, s)
		}
	}
	var rs []Result
	rs = append(rs, stRows("SIGTERM leader → exit", stPick(leaders, func(s stSample) time.Duration { return s.exit }), stExitGoal, note)...)
	rs = append(rs, stRows("SIGTERM follower → exit", stPick(followers, func(s stSample) time.Duration { return s.exit }), stExitGoal, note)...)
	rs = append(rs, stRows("SIGTERM leader → survivor leads", stPick(leaders, func(s stSample) time.Duration { return s.elected }), 0, note)...)
	rs = append(rs, stRows("SIGTERM leader → first write acked by new leader", stPick(leaders, func(s stSample) time.Duration { return s.acked }), 0, note)...)
	rs = append(rs, stRows("write before SIGTERM", stPick(samples, func(s stSample) time.Duration { return s.baseline }), 0,
		"one write to the leader just before each signal, for scale")...)
	if len(leaders) > 0 {
		rs = append(rs, stCount("SIGTERM leader → handed over before exit", leaders, func(s stSample) bool { return s.handedOver },
			"a survivor led before the old leader exited, and no transfer failed"))
	}
	if len(followers) > 0 {
		rs = append(rs, stCount("SIGTERM follower → leader kept", followers, func(s stSample) bool { return s.leaderKept },
			"the leader still led once the follower exited"))
	}
	rs = append(rs, stWriteRows(ok, failed)...)
	return rs
}

func stPick(ss []stSample, f func(stSample) time.Duration) []time.Duration {
	var out []time.Duration
	for _, s := range ss {
		if d := f(s); d >= 0 {
			out = append(out, d)
		}
	}
	return out
}

// stRows are the p50, p99 and max rows of one timing; goal, when set, is
// on the max.
func stRows(name string, ds []time.Duration, goal time.Duration, note string) []Result {
	if len(ds) == 0 {
		return nil
	}
	ds = slices.Sorted(slices.Values(ds))
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	top := ds[len(ds)-1]
	rows := []Result{
		{Suite: "sigterm", Name: name + " p50", Value: ms(foPercentile(ds, 0.50)), Unit: "ms", Note: note},
		{Suite: "sigterm", Name: name + " p99", Value: ms(foPercentile(ds, 0.99)), Unit: "ms"},
		{Suite: "sigterm", Name: name + " max", Value: ms(top), Unit: "ms", Note: fmt.Sprintf("%d samples", len(ds))},
	}
	if goal > 0 {
		rows[2].Target = fmt.Sprintf("<= %d ms", goal.Milliseconds())
		rows[2].Met = Met(top <= goal)
	}
	return rows
}

// stCount is a row of how many of ss hold, whose goal is all of them.
func stCount(name string, ss []stSample, holds func(stSample) bool, note string) Result {
	n := 0
	for _, s := range ss {
		if holds(s) {
			n++
		}
	}
	return Result{Suite: "sigterm", Name: name, Value: float64(n), Unit: "trials",
		Target: fmt.Sprintf("= %d", len(ss)), Met: Met(n == len(ss)), Note: note}
}

// stWriteRows count the failed writes by kind, with no goal (issue 21
// sets none): noLeader says "not done, retry", which the api client does
// on its own; outcomeUnknown and a connection broken mid-request leave the
// client not knowing, which a graceful stop should make rare.
func stWriteRows(ok int64, failed map[string]int64) []Result {
	total := ok
	for _, n := range failed {
		total += n
	}
	note := fmt.Sprintf("of %d writes sent without retries over all trials (%d acknowledged); refused connections to a stopped server not counted", total, ok)
	var rs []Result
	for _, kind := range []string{stNoLeader, stUnknown, stBroken, stOther} {
		rs = append(rs, Result{Suite: "sigterm", Name: "writes failed: " + kind, Value: float64(failed[kind]), Unit: "writes", Note: note})
	}
	return rs
}
