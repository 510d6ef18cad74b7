package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// Log streams of GET /v1/assignments/{id}/logs.
const (
	LogStdout = "stdout"
	LogStderr = "stderr"
	// TailAll asks for the whole output (the default when tail is absent).
	TailAll = -1
	// MaxLogTail bounds ?tail: a bigger request reads a whole file anyway.
	MaxLogTail = 100_000
)

// LogOptions selects what GET /v1/assignments/{id}/logs answers.
type LogOptions struct {
	// Follow keeps the answer open and sends output as it is written,
	// until the workload ends or the caller leaves.
	Follow bool
	// Tail is the number of last lines to start with; TailAll (-1) sends
	// the whole output, 0 only what follows.
	Tail int
	// Stream is LogStdout (when empty) or LogStderr.
	Stream string
}

// Values is the query string of o.
func (o LogOptions) Values() url.Values {
	v := url.Values{}
	if o.Follow {
		v.Set("follow", "true")
	}
	if o.Tail >= 0 {
		v.Set("tail", strconv.Itoa(o.Tail))
	}
	if o.Stream != "" {
		v.Set("stream", o.Stream)
	}
	return v
}

// ParseLogOptions reads the query of a logs request; the error says which
// parameter is wrong (a 400 for the caller).
func ParseLogOptions(q url.Values) (LogOptions, error) {
	o := LogOptions{Tail: TailAll, Stream: LogStdout}
	if v := q.Get("follow"); v != "" {
		f, err := strconv.ParseBool(v)
		if err != nil {
			return o, fmt.Errorf("follow %q is not a boolean", v)
		}
		o.Follow = f
	}
	if v := q.Get("tail"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > MaxLogTail {
			return o, fmt.Errorf("tail %q is not a number of lines from 0 to %d", v, MaxLogTail)
		}
		o.Tail = n
	}
	switch v := q.Get("stream"); v {
	case "", LogStdout:
	case LogStderr:
		o.Stream = LogStderr
	default:
		return o, fmt.Errorf("stream %q is not stdout or stderr", v)
	}
	return o, nil
}

// AssignmentLogs opens an assignment's output (GET
// /v1/assignments/{id}/logs). The caller reads and closes it; with Follow
// it stays open until the workload ends or ctx is cancelled.
func (c *Client) AssignmentLogs(ctx context.Context, id string, o LogOptions) (io.ReadCloser, error) {
	r := c.newRequest(http.MethodGet, pathJoin("v1", "assignments", id, "logs"), o.Values())
	resp, err := c.do(ctx, r)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}
