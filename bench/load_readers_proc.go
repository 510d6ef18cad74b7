package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

// The load test's readers run in a process of their own, as the clients
// they stand for would: in amload's process, 2,000 goroutines decoding
// lists and event streams made the writer's and the health prober's own
// goroutines wait for a turn, and that wait went into the write p99 the
// test judges the servers by (15 of 1,199 creates over 100 ms at the
// clients, 1 at the leader). The child is this executable again with
// readersChildEnv set; it runs the readers for the phase and answers their
// counts as JSON on stdout.

const readersChildEnv = "AMLOAD_READERS_CHILD"

// readersChildArgs is what the parent passes the child.
type readersChildArgs struct {
	Servers []string      `json:"servers"` // http://host:port
	Tokens  []string      `json:"tokens"`
	Clients int           `json:"clients"`
	For     time.Duration `json:"for"`
}

// readersChildOut is what the child answers: loadCounts as plain numbers.
type readersChildOut struct {
	Pages, TooMany, Failed, Woken, Bytes, EventLines int64
}

func init() {
	if arg := os.Getenv(readersChildEnv); arg != "" {
		os.Exit(readersChild(arg, os.Stdout))
	}
}

// startReaderProcess starts the readers' process for d and returns a
// function that waits for it and adds what it counted to counts.
func startReaderProcess(ctx context.Context, c *loadCluster, n int, d time.Duration, counts *loadCounts) (func() error, error) {
	args := readersChildArgs{Tokens: c.read, Clients: n, For: d}
	for _, s := range c.servers {
		args.Servers = append(args.Servers, s.http)
	}
	wait, err := startChild(ctx, readersChildEnv, args)
	if err != nil {
		return nil, fmt.Errorf("readers: %w", err)
	}
	return func() error {
		var out readersChildOut
		err := wait(&out)
		counts.add(out)
		if err != nil {
			return fmt.Errorf("readers: %w", err)
		}
		return nil
	}, nil
}

// readersChild runs the readers for startReaderProcess and returns the
// exit code.
func readersChild(arg string, w io.Writer) int {
	var args readersChildArgs
	if err := json.Unmarshal([]byte(arg), &args); err != nil || len(args.Servers) == 0 || len(args.Tokens) == 0 {
		fmt.Fprintf(os.Stderr, "readers child: bad arguments %q: %v\n", arg, err)
		return 2
	}
	c := &loadCluster{read: args.Tokens}
	for _, s := range args.Servers {
		c.servers = append(c.servers, &loadServer{http: s})
	}
	ctx, cancel := context.WithTimeout(context.Background(), args.For)
	defer cancel()
	var counts loadCounts
	startReaders(ctx, c, args.Clients, &counts).Wait()
	if err := json.NewEncoder(w).Encode(counts.plain()); err != nil {
		fmt.Fprintf(os.Stderr, "readers child: %v\n", err)
		return 2
	}
	return 0
}

func (l *loadCounts) plain() readersChildOut {
	return readersChildOut{Pages: l.pages.Load(), TooMany: l.tooMany.Load(), Failed: l.failed.Load(),
		Woken: l.woken.Load(), Bytes: l.bytes.Load(), EventLines: l.eventLines.Load()}
}

func (l *loadCounts) add(o readersChildOut) {
	l.pages.Add(o.Pages)
	l.tooMany.Add(o.TooMany)
	l.failed.Add(o.Failed)
	l.woken.Add(o.Woken)
	l.bytes.Add(o.Bytes)
	l.eventLines.Add(o.EventLines)
}
