package gossip

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/internal/poll"
	"github.com/hashicorp/memberlist"
)

func TestParseLogLine(t *testing.T) {
	cases := []struct {
		in    string
		level slog.Level
		msg   string
	}{
		{"[DEBUG] memberlist: Stream connection from=1.2.3.4:5\n", slog.LevelDebug, "Stream connection from=1.2.3.4:5"},
		{"[INFO] memberlist: Suspect n2 has failed, no acks received\n", slog.LevelInfo, "Suspect n2 has failed, no acks received"},
		{"[WARN] memberlist: Refuting a suspect message (from: n1)", slog.LevelWarn, "Refuting a suspect message (from: n1)"},
		{"[ERR] memberlist: Failed fallback TCP ping: boom\r\n", slog.LevelError, "Failed fallback TCP ping: boom"},
		{"[ERROR] something", slog.LevelError, "something"},
		{"Err: Could not set the deadline: x\n", slog.LevelInfo, "Err: Could not set the deadline: x"},
		{"[ODD] memberlist: x", slog.LevelInfo, "x"},
		{"", slog.LevelInfo, ""},
	}
	for _, c := range cases {
		level, msg := parseLogLine(c.in)
		if level != c.level || msg != c.msg {
			t.Errorf("parseLogLine(%q) = %v %q, want %v %q", c.in, level, msg, c.level, c.msg)
		}
	}
}

func TestLogBridgeRoutesLevelsAndSuspicion(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var suspects []string
	std := newStdLogger(logger, func(n string) { suspects = append(suspects, n) })

	std.Printf("[INFO] memberlist: Suspect %s has failed, no acks received", "worker-7.az1")
	std.Printf("[INFO] memberlist: Suspect  has failed, no acks received") // no name
	std.Printf("[WARN] memberlist: Was able to connect to n1 over TCP but UDP probes failed")
	std.Printf("[DEBUG] memberlist: chatter")

	if len(suspects) != 1 || suspects[0] != "worker-7.az1" {
		t.Fatalf("suspects = %q", suspects)
	}
	out := buf.String()
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, `msg="Was able to connect`) {
		t.Fatalf("warn line missing or unparsed: %s", out)
	}
	if strings.Contains(out, "chatter") || strings.Contains(out, "Suspect") {
		t.Fatalf("lines below the handler level leaked: %s", out)
	}
}

func member(name string) Member {
	return Member{Name: name, Addr: "127.0.0.1", Port: 7072, Meta: Meta{Role: RoleWorker, Version: 1}}
}

func drain(tb *table) []Event {
	var out []Event
	for {
		ev, ok := tb.next()
		if !ok {
			return out
		}
		out = append(out, ev)
	}
}

func TestTableTransitionsAndCoalescing(t *testing.T) {
	tb := newTable("self")
	tb.joined(member("a"))
	tb.joined(member("b"))
	tb.suspect("a") // folds into a's pending join
	evs := drain(tb)
	if len(evs) != 2 || evs[0].Member.Name != "a" || evs[1].Member.Name != "b" {
		t.Fatalf("want a then b, got %+v", evs)
	}
	if evs[0].Type != MemberJoin || evs[0].Member.Status != StatusSuspect || evs[0].Coalesced != 1 {
		t.Fatalf("coalesced join = %+v", evs[0])
	}

	tb.suspect("self") // never suspect ourselves
	tb.acked("a")      // direct ack ends the suspicion
	tb.left(member("b"))
	tb.suspect("b") // a dead member cannot become suspect
	evs = drain(tb)
	if len(evs) != 2 || evs[0].Type != MemberAlive || evs[1].Type != MemberDead {
		t.Fatalf("want alive(a), dead(b); got %+v", evs)
	}

	tb.intent("b") // a late leave announcement turns dead into left
	tb.intent("a") // for a live member it may be stale: ignored
	evs = drain(tb)
	if len(evs) != 1 || evs[0].Type != MemberLeft || evs[0].Member.Name != "b" {
		t.Fatalf("want left(b); got %+v", evs)
	}
	tb.left(member("a"))
	if m, _ := tb.get("a"); m.Status != StatusDead {
		t.Fatalf("a failed without announcing a leave, status %s", m.Status)
	}
	leaving := member("a")
	leaving.Meta.Leaving = true
	tb.joined(member("a"))
	tb.updated(leaving)
	tb.left(leaving)
	if m, _ := tb.get("a"); m.Status != StatusLeft {
		t.Fatalf("a left after announcing it, status %s", m.Status)
	}
	if got := tb.live(); got != 0 {
		t.Fatalf("live = %d", got)
	}
}

func TestTableMembersAreCopies(t *testing.T) {
	tb := newTable("self")
	m := member("a")
	m.Meta.Tags = map[string]string{"k": "v"}
	tb.joined(m)
	got, _ := tb.get("a")
	got.Meta.Tags["k"] = "changed"
	if again, _ := tb.get("a"); again.Meta.Tags["k"] != "v" {
		t.Fatal("caller mutated the table through Tags")
	}
}

func TestFaultTransportDropsBlockedTraffic(t *testing.T) {
	var mn memberlist.MockNetwork
	a := NewFaultTransport(mn.NewTransport("a"))
	b := mn.NewTransport("b")
	c := mn.NewTransport("c")
	t.Cleanup(func() { _ = a.Shutdown() })
	if _, _, err := a.FinalAdvertiseAddr("", 0); err != nil || a.Addr() != "127.0.0.1:1" {
		t.Fatalf("Addr = %q, %v", a.Addr(), err)
	}
	bAddr, cAddr := "127.0.0.1:2", "127.0.0.1:3"

	// Outgoing: a blocked write vanishes; the next packet b sees is the later one.
	a.Block(bAddr)
	if _, err := a.WriteTo([]byte("lost"), bAddr); err != nil {
		t.Fatal(err)
	}
	if _, err := a.DialTimeout(bAddr, 0); !errors.Is(err, ErrBlocked) {
		t.Fatalf("dial blocked peer: %v", err)
	}
	a.Unblock(bAddr)
	go func() { _, _ = a.WriteTo([]byte("kept"), bAddr) }()
	if p := <-b.PacketCh(); string(p.Buf) != "kept" {
		t.Fatalf("b got %q", p.Buf)
	}

	// Incoming: packets from a blocked sender are discarded in order, so the
	// first packet a delivers is c's, sent after b's.
	a.Block(bAddr)
	if _, err := b.WriteTo([]byte("from b"), "127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = c.WriteTo([]byte("from c"), "127.0.0.1:1") }()
	if p := <-a.PacketCh(); string(p.Buf) != "from c" || p.From.String() != cAddr {
		t.Fatalf("a got %q from %v", p.Buf, p.From)
	}
	a.UnblockAll()
	if a.isBlocked(bAddr) {
		t.Fatal("UnblockAll left b blocked")
	}
}

// shutdownSender is a transport whose Shutdown hands over one last packet
// before it returns, as memberlist's NetTransport does when a datagram
// arrives during shutdown: its UDP listener blocks on the send, and
// Shutdown waits for the listener.
type shutdownSender struct {
	memberlist.Transport
	packets chan *memberlist.Packet
}

func (s shutdownSender) PacketCh() <-chan *memberlist.Packet { return s.packets }

func (s shutdownSender) Shutdown() error {
	s.packets <- &memberlist.Packet{Buf: []byte("late")}
	return nil
}

func TestFaultTransportShutdownDrainsLatePackets(t *testing.T) {
	var mn memberlist.MockNetwork
	ft := NewFaultTransport(shutdownSender{Transport: mn.NewTransport("a"), packets: make(chan *memberlist.Packet)})
	returned := make(chan error, 1)
	go func() { returned <- ft.Shutdown() }()
	poll.Eventually(t, 10*time.Second, "Shutdown returns though a packet arrived during it", func() error {
		select {
		case err := <-returned:
			return poll.Check(err == nil, "Shutdown: %v", err)
		default:
			return errors.New("Shutdown has not returned")
		}
	})
}

func TestNormAddr(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:7":         "127.0.0.1:7",
		"[::ffff:10.0.0.1]:9": "10.0.0.1:9",
		"[::1]:80":            "[::1]:80",
		"host.example:1":      "host.example:1",
	} {
		if got := normAddr(in); got != want {
			t.Errorf("normAddr(%q) = %q, want %q", in, got, want)
		}
	}
}

// The defaults keep issue 21's promise: a crash is dead within 1 s (less
// the Raft commits that follow), a live member is never declared dead for
// a stall shorter than half a second, and a lone accuser needs longer.
func TestDefaultBudget(t *testing.T) {
	for _, n := range []int{3, 7, 10} {
		b := DefaultConfig().Budget(n)
		if b.Detect > 700*time.Millisecond {
			t.Errorf("%d members: a crash is dead after %v, want <= 700 ms", n, b.Detect)
		}
		if b.Tolerance < 500*time.Millisecond {
			t.Errorf("%d members: a %v stall is declared dead, want >= 500 ms", n, b.Tolerance)
		}
		if b.LoneTolerance < b.Tolerance {
			t.Errorf("%d members: a lone accuser (%v) is trusted more than a confirmed one (%v)", n, b.LoneTolerance, b.Tolerance)
		}
	}
}

// Budget follows memberlist's formulas: confirmations expected only where
// enough members can give them, suspicion scaled by log10 N past 10.
func TestBudgetFormulas(t *testing.T) {
	cfg := Config{ProbeInterval: 200 * time.Millisecond, SuspicionMult: 7, SuspicionMaxMult: 3}
	cases := []struct {
		n          int
		k          int
		s, max     time.Duration
		detect     time.Duration
		tolerance  time.Duration
		loneTolera time.Duration
	}{
		{3, 0, 1400 * time.Millisecond, 1400 * time.Millisecond, 1800 * time.Millisecond, 1600 * time.Millisecond, 1600 * time.Millisecond},
		{7, 5, 1400 * time.Millisecond, 4200 * time.Millisecond, 1800 * time.Millisecond, 1600 * time.Millisecond, 4400 * time.Millisecond},
		{100, 5, 2800 * time.Millisecond, 8400 * time.Millisecond, 3200 * time.Millisecond, 3000 * time.Millisecond, 8600 * time.Millisecond},
	}
	for _, c := range cases {
		b := cfg.Budget(c.n)
		want := Budget{Confirmations: c.k, Suspicion: c.s, SuspicionMax: c.max, Detect: c.detect, Tolerance: c.tolerance, LoneTolerance: c.loneTolera}
		if b != want {
			t.Errorf("Budget(%d) = %+v, want %+v", c.n, b, want)
		}
	}
}
