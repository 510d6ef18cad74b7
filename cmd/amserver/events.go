package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/amserver/amserver/api"
)

// eventTypes are the types --type accepts (DESIGN §7).
var eventTypes = api.EventTypes

// Reconnection backoff after the stream drops.
const (
	reconnectFirst = 250 * time.Millisecond
	reconnectMax   = 5 * time.Second
)

func newEventsCmd(a *app) *cobra.Command {
	var (
		from  uint64
		types []string
	)
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Follow the cluster's events (placements, failovers, evictions, node changes)",
		Long: `Follow the cluster's event stream: every event with an index above --index
(0: all the server still keeps, up to 10,000), then each new one as it happens,
one table row per event, or one JSON object per line with --json.

When the connection drops (a server restarts, the leader changes) it
reconnects and resumes after the last event printed, without repeating or
skipping any. It runs until interrupted, or for --timeout when that is given;
it exits 1 when it ends while the stream is down (nothing was watched).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, t := range types {
				if !slices.Contains(eventTypes, t) {
					return usagef("unknown event type %q (one of %v)", t, eventTypes)
				}
			}
			c, err := a.client(cmd)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithCancel(cmd.Context())
			if cmd.Flags().Changed("timeout") && a.timeout > 0 {
				ctx, cancel = context.WithTimeout(cmd.Context(), a.timeout) // a follow has no natural end
			}
			defer cancel()
			f := &follower{c: c, out: newEventPrinter(cmd.OutOrStdout(), a.json), log: cmd.ErrOrStderr(), types: types}
			return f.follow(ctx, from)
		},
	}
	cmd.Flags().Uint64Var(&from, "index", 0, "print events with an index above this one (resume from the last index seen)")
	cmd.Flags().StringSliceVar(&types, "type", nil, "only events of this type (repeatable)")
	_ = cmd.RegisterFlagCompletionFunc("type", cobra.FixedCompletions(eventTypes, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// follower reads the stream and reconnects after it drops. The events of
// one Raft entry share an index, so a cursor of an index alone could repeat
// or lose the rest of an entry cut in the middle: it also counts the
// events of its last index already printed, and skips those on resume.
type follower struct {
	c     *api.Client
	out   *eventPrinter
	log   io.Writer
	types []string

	last   uint64 // index of the last event received
	atLast int    // events of index last received
	skip   int    // events of index last still to skip after a reconnect
}

func (f *follower) follow(ctx context.Context, from uint64) error {
	f.last = from
	backoff := reconnectFirst
	for {
		after := f.last
		if f.atLast > 0 {
			after, f.skip = f.last-1, f.atLast // re-read the last entry whole
		}
		received := false
		err := f.c.Events(ctx, after, func(ev api.Event) error {
			received = true
			return f.event(ev)
		})
		if ctx.Err() != nil {
			if err != nil && !errors.Is(err, ctx.Err()) {
				return f.down(err) // the client was still retrying (noLeader)
			}
			return nil // interrupted, or --timeout: the normal end of a follow
		}
		if err != nil && !transient(err) {
			return about(err, "events", "")
		}
		if received {
			backoff = reconnectFirst
		}
		fmt.Fprintf(f.log, "event stream ended (%s); resuming after index %d\n", reason(err), f.last)
		if !sleep(ctx, backoff) {
			if err != nil {
				return f.down(err)
			}
			return nil
		}
		backoff = min(2*backoff, reconnectMax)
	}
}

// down is the end of a follow while the stream cannot be reached (or never
// could be): what it was asked to watch was not watched, which must not
// read as success.
func (f *follower) down(err error) error {
	return fmt.Errorf("the event stream was down when the follow ended; events after index %d may be unseen: %w", f.last, err)
}

// event prints one event unless it was printed before the reconnect or
// filtered out, and moves the cursor.
func (f *follower) event(ev api.Event) error {
	if ev.Index == f.last && f.skip > 0 {
		f.skip--
		return nil
	}
	f.skip = 0
	if ev.Index != f.last {
		f.last, f.atLast = ev.Index, 0
	}
	f.atLast++
	if len(f.types) > 0 && !slices.Contains(f.types, ev.Type) {
		return nil
	}
	return f.out.print(ev)
}

// transient errors are worth a reconnect: the network, a server that went
// away or has no leader. Anything else (a bad request, a refused token)
// would fail again.
func transient(err error) bool {
	var e *api.Error
	if !errors.As(err, &e) {
		return true
	}
	return e.Status >= http.StatusInternalServerError
}

func reason(err error) string {
	if err == nil {
		return "the server closed it"
	}
	return err.Error()
}

// eventPrinter writes events as they come: a row each (columns padded to
// a minimum width, as a stream cannot align on rows it has not seen), or
// NDJSON.
type eventPrinter struct {
	w       io.Writer
	json    bool
	headers bool
}

func newEventPrinter(w io.Writer, asJSON bool) *eventPrinter {
	return &eventPrinter{w: w, json: asJSON}
}

// eventRow pads TYPE to the longest event type, and NODE to fit an
// elastic pool's node ids (pool-1c9e0f2a), so the messages line up.
var eventRow = "%-8s  %-19s  %-" + strconv.Itoa(longest(api.EventTypes)) + "s  %-16s  %-16s  %s\n"

func longest(list []string) int {
	n := 0
	for _, s := range list {
		n = max(n, len(s))
	}
	return n
}

func (p *eventPrinter) print(ev api.Event) error {
	if p.json {
		line, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("encode event %d: %w", ev.Index, err)
		}
		_, err = fmt.Fprintf(p.w, "%s\n", line)
		return err
	}
	if !p.headers {
		p.headers = true
		if _, err := fmt.Fprintf(p.w, eventRow, "INDEX", "TIME", "TYPE", "BUNDLE", "NODE", "MESSAGE"); err != nil {
			return err
		}
	}
	when := "-"
	if !ev.Time.IsZero() {
		when = ev.Time.Local().Format(time.DateTime)
	}
	_, err := fmt.Fprintf(p.w, eventRow, strconv.FormatUint(ev.Index, 10), when, clean(ev.Type),
		clean(orDash(ev.BundleID)), clean(orDash(ev.NodeID)), clean(ev.Message))
	return err
}
