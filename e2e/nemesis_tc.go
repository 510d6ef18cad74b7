//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
)

// netemArgs slow and thin every server's egress. A round trip between two
// servers becomes ~160 ms ± 80 ms with 5% loss per direction: a lost
// segment waits for TCP's 200 ms retransmission, so a heartbeat now and
// then misses the 500 ms Raft timeout and elections happen, without the
// cluster being unavailable most of the time.
var netemArgs = []string{"delay", "80ms", "40ms", "loss", "5%"}

// Without netem the fallback drops packets at random in the suite's
// iptables chain, at both ends (INPUT and OUTPUT jump to it), so a path
// between two servers loses about twice fallbackLoss. Loopback is spared:
// the container's own health check uses it. TCP's retransmission timeout
// (≥200 ms) turns the loss into the delay spikes netem would have added.
const fallbackLoss = "0.04"

var fallbackLossRule = []string{"!", "-d", "127.0.0.0/8", "-m", "statistic", "--mode", "random",
	"--probability", fallbackLoss, "-j", "DROP"}

// netemNemesis adds a netem qdisc on eth0 of every server. It shapes all
// egress, clients' answers included, which is what a bad network does.
type netemNemesis struct {
	name string
	c    *Cluster
}

func newNetem(name string, c *Cluster, _ *rand.Rand) Nemesis { return &netemNemesis{name: name, c: c} }

func (n *netemNemesis) Name() string { return n.name }

func (n *netemNemesis) Start(ctx context.Context) error {
	for _, s := range n.c.Servers {
		if err := n.shape(ctx, s); err != nil {
			return fmt.Errorf("e2e: %s on %s: %w", n.name, s.ID, err)
		}
	}
	return nil
}

// shape installs netem on one server, or the loss-only fallback when the
// kernel was built without sch_netem (some VM kernels are): a netem nemesis
// that silently did nothing would pass every run and prove nothing.
func (n *netemNemesis) shape(ctx context.Context, s Node) error {
	pid, err := containerPID(ctx, s.Container)
	if err != nil {
		return err
	}
	args := append([]string{"tc", "qdisc", "replace", "dev", "eth0", "root", "netem"}, netemArgs...)
	_, err = nsenterNet(ctx, pid, args...)
	switch {
	case err == nil:
		n.c.logf("nemesis %s: netem %s on %s", n.name, strings.Join(netemArgs, " "), s.ID)
		return nil
	case !strings.Contains(err.Error(), "qdisc kind is unknown"):
		return err
	}
	n.c.logf("nemesis %s: kernel has no sch_netem; iptables random drop p=%s per end (no added delay) on %s",
		n.name, fallbackLoss, s.ID)
	return installRules(ctx, s.Container, [][]string{fallbackLossRule})
}

// Heal removes the fallback chain, and deletes the root qdisc only where a netem one is installed, so the
// default qdisc of an untouched (or restarted) container is left alone.
func (n *netemNemesis) Heal(ctx context.Context) error {
	var errs []error
	for _, s := range n.c.Servers {
		if err := removeRules(ctx, s.Container); err != nil {
			errs = append(errs, fmt.Errorf("e2e: heal %s on %s: %w", n.name, s.ID, err))
		}
		pid, err := containerPID(ctx, s.Container)
		if err != nil {
			continue // not running: its namespace went with it
		}
		out, err := nsenterNet(ctx, pid, "tc", "qdisc", "show", "dev", "eth0")
		if err != nil {
			errs = append(errs, fmt.Errorf("e2e: heal %s on %s: %w", n.name, s.ID, err))
			continue
		}
		if !strings.Contains(out, "netem") {
			continue
		}
		if _, err := nsenterNet(ctx, pid, "tc", "qdisc", "del", "dev", "eth0", "root"); err != nil {
			errs = append(errs, fmt.Errorf("e2e: heal %s on %s: %w", n.name, s.ID, err))
		}
	}
	return errors.Join(errs...)
}
