package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/amserver/amserver/api"
)

func init() { Suites["sigterm"] = runSigterm }

// The sigterm suite (issue 21: "SIGTERM drains and exits in <= 5 s, a
// leader transfers leadership first"). Three `amserver agent --server`
// processes of this tree run under a steady write load; the leader and a
// follower in turn get SIGTERM, and the suite times the signal to the
// process's exit and, for the leader, to a survivor leading and to the
// first write that survivor acknowledges as leader. Between trials the
// stopped server starts again on its data and the cluster is let become
// healthy.

// stExitGoal is what SIGTERM may take (cmd/amserver's shutdownBudget).
const stExitGoal = 5 * time.Second

// stTransferFailed is what a server logs when its leadership transfer on
// shutdown failed (agent.Server.Shutdown).
const stTransferFailed = "leadership transfer before shutdown failed"

// SigtermPlan sizes the sigterm suite; zero fields take the defaults.
type SigtermPlan struct {
	Trials    int // SIGTERMs to the leader, and as many to a follower; default 10 (3 quick)
	Servers   int // default 3
	WriteRate int // writes per second sent to each server; default 30
	Root      string
}

func runSigterm(ctx context.Context, o Options) ([]Result, error) {
	return MeasureSigterm(ctx, o, SigtermPlan{})
}

func (p SigtermPlan) withDefaults(quick bool) (SigtermPlan, error) {
	if p.Trials <= 0 {
		p.Trials = 10
		if quick {
			p.Trials = 3
		}
	}
	if p.Servers <= 0 {
		p.Servers = 3
	}
	if p.WriteRate <= 0 {
		p.WriteRate = 30
	}
	if p.Root == "" {
		root, err := findRepoRoot()
		if err != nil {
			return p, err
		}
		p.Root = root
	}
	return p, nil
}

// findRepoRoot is the first directory up from the working one that holds
// cmd/amserver (ambench runs from bench/ or from the repository).
func findRepoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if st, err := os.Stat(filepath.Join(d, "cmd", "amserver")); err == nil && st.IsDir() {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no cmd/amserver above %s", wd)
		}
	}
}

// stSample is one SIGTERM's timings, each from the signal.
type stSample struct {
	leader     bool
	exit       time.Duration // signal → the process exited
	elected    time.Duration // leader: signal → a survivor leads (-1: none seen)
	acked      time.Duration // leader: signal → first write the new leader acknowledged (-1: none)
	handedOver bool          // leader: a survivor led before the exit and no transfer failed
	leaderKept bool          // follower: the leader still led after the exit
	baseline   time.Duration // a write to the leader just before the signal
	ackLatency time.Duration // leader: how long the acknowledged write took
	ackTries   int           // leader: writes sent until one was acknowledged
	ackErr     error         // leader: why no write was acknowledged
}

// MeasureSigterm runs plan's trials against a cluster of server processes.
func MeasureSigterm(ctx context.Context, o Options, plan SigtermPlan) ([]Result, error) {
	plan, err := plan.withDefaults(o.Quick)
	if err != nil {
		return nil, err
	}
	bin, err := buildAmserver(ctx, plan.Root, o.Dir)
	if err != nil {
		return nil, err
	}
	c, err := startStCluster(ctx, bin, o.Dir, plan.Servers)
	if c != nil {
		defer c.stop()
	}
	if err != nil {
		return nil, err
	}
	if _, err := c.healthy(ctx, 60*time.Second); err != nil {
		return nil, err
	}
	load := startStLoad(ctx, c, plan.WriteRate)
	var samples []stSample
	for i := range 2 * plan.Trials {
		s, err := c.trial(ctx, i%2 == 0)
		if err != nil {
			load.stop()
			return stResults(plan, samples, load), fmt.Errorf("sigterm trial %d: %w", i+1, err)
		}
		o.Logger.Info("sigterm trial", "trial", i+1, "leader", s.leader, "exit", s.exit.Round(time.Millisecond),
			"elected", s.elected.Round(time.Millisecond), "acked", s.acked.Round(time.Millisecond),
			"handedOver", s.handedOver, "leaderKept", s.leaderKept, "ackTries", s.ackTries, "ackLatency", s.ackLatency.Round(time.Millisecond), "baseline", s.baseline.Round(time.Millisecond), "ackErr", s.ackErr)
		samples = append(samples, s)
	}
	load.stop()
	for kind, msg := range load.lastErrors() {
		o.Logger.Info("sigterm write load: last failed write", "kind", kind, "err", msg)
	}
	return stResults(plan, samples, load), nil
}

// trial sends SIGTERM to the leader (or a follower), times what follows,
// then starts the server again and waits until the cluster is healthy.
func (c *stCluster) trial(ctx context.Context, leader bool) (stSample, error) {
	s := stSample{leader: leader, elected: -1, acked: -1}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	l, err := c.healthy(ctx, 60*time.Second)
	if err != nil {
		return s, err
	}
	victim := l
	if !leader {
		victim = c.procs[(slices.Index(c.procs, l)+1)%len(c.procs)]
	}
	if s.baseline, err = timeWrite(ctx, l); err != nil {
		return s, err
	}
	failedBefore := victim.logCount(stTransferFailed)
	var watch <-chan stElection
	if leader {
		watch = c.watchNewLeader(ctx, victim)
	}
	start, err := victim.terminate()
	if err != nil {
		return s, err
	}
	exitAt := victim.waitExit(30 * time.Second)
	s.exit = exitAt.Sub(start)
	if leader {
		leaderTimes(watch, start, exitAt, &s)
		s.handedOver = s.handedOver && victim.logCount(stTransferFailed) == failedBefore
	} else if h, err := l.health(ctx); err == nil && h.IsLeader {
		s.leaderKept = true
	}
	if err := victim.start(c.bin); err != nil {
		return s, err
	}
	return s, nil
}

// leaderTimes fills in when a survivor led and acknowledged its first write.
func leaderTimes(watch <-chan stElection, start, exitAt time.Time, s *stSample) {
	e, ok := <-watch
	if !ok {
		return
	}
	s.elected = e.at.Sub(start)
	s.handedOver = e.at.Before(exitAt)
	if e.err == nil {
		s.acked, s.ackLatency = e.acked.Sub(start), e.acked.Sub(e.sent)
	}
	s.ackTries, s.ackErr = e.tries, e.err
}

// stElection is a survivor found leading, and its first acknowledged write.
type stElection struct {
	at          time.Time
	leader      *stProc
	sent, acked time.Time
	tries       int
	err         error
}

// watchNewLeader finds the first server other than old that says it leads,
// polling every 5 ms, writes to it at once until a write is acknowledged,
// and reports both.
func (c *stCluster) watchNewLeader(ctx context.Context, old *stProc) <-chan stElection {
	out := make(chan stElection, 1)
	go func() {
		defer close(out)
		for ctx.Err() == nil {
			for _, p := range c.procs {
				if h, err := p.health(ctx); p != old && err == nil && h.IsLeader {
					e := stElection{at: time.Now(), leader: p}
					e.sent, e.acked, e.tries, e.err = firstWriteOn(ctx, p)
					out <- e
					return
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return out
}

// firstWriteOn writes to p, found leading, until it acknowledges one, and
// returns when that write was sent and acknowledged, after how many tries,
// and the last error.
func firstWriteOn(ctx context.Context, p *stProc) (sent, acked time.Time, tries int, err error) {
	cl := p.client()
	for tries = 1; ; tries++ {
		sent = time.Now()
		_, err = cl.PutPool(ctx, api.Pool{Name: fmt.Sprintf("after-sigterm-%d", tries%8)})
		if err == nil {
			return sent, time.Now(), tries, nil
		}
		if ctx.Err() != nil {
			return sent, time.Time{}, tries, fmt.Errorf("no write acknowledged by %s: %w", p.id, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// timeWrite times one write through p.
func timeWrite(ctx context.Context, p *stProc) (time.Duration, error) {
	start := time.Now()
	if _, err := p.client().PutPool(ctx, api.Pool{Name: "before-sigterm"}); err != nil {
		return 0, fmt.Errorf("write before SIGTERM on %s: %w", p.id, err)
	}
	return time.Since(start), nil
}

// logCount counts s in the process's log (every run of it).
func (p *stProc) logCount(s string) int {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), s)
}
