package worker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/internal/poll"
)

// logServer serves d's logs the way a worker does; checkToken admits the
// token "reader" only.
func logServer(t *testing.T, d Driver) *httptest.Server {
	t.Helper()
	return workerLogServer(t, &Worker{cfg: Config{NodeID: "w1", Driver: d}, logger: slog.New(slog.DiscardHandler)})
}

// workerLogServer serves w's log endpoint, as logServer does.
func workerLogServer(t *testing.T, w *Worker) *httptest.Server {
	t.Helper()
	w.checkToken = func(_ context.Context, token string) error {
		switch token {
		case "reader":
			return nil
		case "down":
			return errors.New("no server answers")
		}
		return &api.Error{Status: http.StatusForbidden, Code: api.CodeForbidden, Message: "no"}
	}
	srv := httptest.NewServer(w.httpHandler())
	t.Cleanup(srv.Close)
	return srv
}

func getLogs(t *testing.T, ctx context.Context, srv *httptest.Server, id, token string, q url.Values) *http.Response {
	t.Helper()
	u := srv.URL + "/v1/assignments/" + url.PathEscape(id) + "/logs?" + q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(api.HeaderToken, token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func readAll(t *testing.T, resp *http.Response) (int, string) {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func errorCode(body string) string {
	var e api.ErrorBody
	if json.Unmarshal([]byte(body), &e) != nil || e.Error == nil {
		return ""
	}
	return e.Error.Code
}

// TestWorkerLogsExec: a real exec job's output, by stream and tail, to a
// reader only, for assignments this worker runs only; bad queries are 400.
func TestWorkerLogsExec(t *testing.T) {
	dataDir := t.TempDir()
	d := newDispatcher(t, "w1", dataDir, nil, api.RuntimeExec)
	script := `for i in 1 2 3 4 5; do echo "line $i"; done; echo oops >&2; exec sleep 600`
	a := assignment("w1", "b1", "job", api.Launch{Driver: api.DriverExec, Command: []string{"sh", "-c", script}}, api.RuntimeExec)
	waitState(t, d, a, api.JobRunning, 30*time.Second)
	waitLog(t, dataDir, a.ID, stdoutLog, "line 5")
	waitLog(t, dataDir, a.ID, stderrLog, "oops")
	srv := logServer(t, d)
	cases := []struct {
		name, id, token string
		q               url.Values
		status          int
		code, body      string
	}{
		{"all of stdout", a.ID, "reader", nil, 200, "", "line 1\nline 2\nline 3\nline 4\nline 5\n"},
		{"tail 2", a.ID, "reader", url.Values{"tail": {"2"}}, 200, "", "line 4\nline 5\n"},
		{"tail 0", a.ID, "reader", url.Values{"tail": {"0"}}, 200, "", ""},
		{"tail beyond", a.ID, "reader", url.Values{"tail": {"99"}}, 200, "", "line 1\nline 2\nline 3\nline 4\nline 5\n"},
		{"stderr", a.ID, "reader", url.Values{"stream": {"stderr"}}, 200, "", "oops\n"},
		{"not run here", "b9:0:job@w1", "reader", nil, 404, api.CodeNotFound, ""},
		{"bad tail", a.ID, "reader", url.Values{"tail": {"-1"}}, 400, api.CodeBadRequest, ""},
		{"huge tail", a.ID, "reader", url.Values{"tail": {"100001"}}, 400, api.CodeBadRequest, ""},
		{"bad stream", a.ID, "reader", url.Values{"stream": {"both"}}, 400, api.CodeBadRequest, ""},
		{"bad follow", a.ID, "reader", url.Values{"follow": {"maybe"}}, 400, api.CodeBadRequest, ""},
		{"token refused", a.ID, "worker", nil, 403, api.CodeForbidden, ""},
		{"no server to ask", a.ID, "down", nil, 503, api.CodeNoLeader, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := readAll(t, getLogs(t, t.Context(), srv, tc.id, tc.token, tc.q))
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
			if tc.code != "" && errorCode(body) != tc.code {
				t.Fatalf("code in %s, want %s", body, tc.code)
			}
			if tc.code == "" && body != tc.body {
				t.Fatalf("body %q, want %q", body, tc.body)
			}
		})
	}
}

// TestWorkerLogsFollow: a follower gets the lines written after its
// request, and its answer ends when the task is stopped.
func TestWorkerLogsFollow(t *testing.T) {
	dataDir := t.TempDir()
	d := newDispatcher(t, "w1", dataDir, nil, api.RuntimeExec)
	gate := filepath.Join(t.TempDir(), "go")
	script := `echo first; while [ ! -f ` + gate + ` ]; do sleep 0.05; done; echo second; exec sleep 600`
	a := assignment("w1", "b1", "job", api.Launch{Driver: api.DriverExec, Command: []string{"sh", "-c", script}}, api.RuntimeExec)
	waitState(t, d, a, api.JobRunning, 30*time.Second)
	waitLog(t, dataDir, a.ID, stdoutLog, "first")
	srv := logServer(t, d)
	resp := getLogs(t, t.Context(), srv, a.ID, "reader", url.Values{"follow": {"true"}})
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("status %d, content type %q", resp.StatusCode, ct)
	}
	lines := bufio.NewReader(resp.Body)
	if l, err := lines.ReadString('\n'); err != nil || l != "first\n" {
		t.Fatalf("first line %q, %v", l, err)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if l, err := lines.ReadString('\n'); err != nil || l != "second\n" {
		t.Fatalf("line written after the request: %q, %v", l, err)
	}
	a.Desired = api.DesiredStop
	d.Ensure(context.Background(), a)
	rest, err := io.ReadAll(lines) // the task is gone: the answer ends
	if err != nil || len(rest) != 0 {
		t.Fatalf("after the stop: %q, %v", rest, err)
	}
}

// checkWasmLogs: a batch wasm module's stdout and stderr, served after it
// exited; following an exited module ends at once. TestWasmDriver runs it
// with its dispatcher, whose compiled module is cached.
func checkWasmLogs(t *testing.T, d *Dispatcher, ref string) {
	params := map[string]string{"WORKLOAD_EXIT": "4", "WORKLOAD_STDERR": "wasm says bye"}
	a := assignment("w1", "b9", "mod", wasmLaunch(ref, params), api.RuntimeWasm)
	a.RunOnce = true // a batch module ends for good: a follower ends with it
	waitState(t, d, a, api.JobExited, time.Minute)
	srv := logServer(t, d)
	status, out := readAll(t, getLogs(t, t.Context(), srv, a.ID, "reader", url.Values{"follow": {"true"}}))
	if status != 200 || !strings.Contains(out, envLine("AMSERVER_ROLE", "primary")) {
		t.Fatalf("stdout %d %q", status, out)
	}
	status, errs := readAll(t, getLogs(t, t.Context(), srv, a.ID, "reader", url.Values{"stream": {"stderr"}, "tail": {"2"}}))
	if status != 200 || !strings.HasPrefix(errs, "wasm says bye\n") || strings.Count(errs, "\n") != 2 {
		t.Fatalf("stderr %d %q", status, errs)
	}
}

// TestWorkerLogsNone: a simulated task has an empty output; one the driver
// does not hold is 404.
func TestWorkerLogsNone(t *testing.T) {
	d := NewNoneDriver()
	a := assignment("w1", "b1", "job", api.Launch{}, "")
	d.Ensure(context.Background(), a)
	srv := logServer(t, d)
	if status, body := readAll(t, getLogs(t, t.Context(), srv, a.ID, "reader", url.Values{"follow": {"true"}})); status != 200 || body != "" {
		t.Fatalf("%d %q", status, body)
	}
	if status, _ := readAll(t, getLogs(t, t.Context(), srv, "other", "reader", nil)); status != 404 {
		t.Fatalf("unknown task: %d", status)
	}
}

// TestWorkerLogsDocker: a container's output, copied by the driver, served
// the same way.
func TestWorkerLogsDocker(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	node, dataDir := testNode(), t.TempDir()
	t.Cleanup(func() { sweepNode(t, node) })
	d := newDispatcher(t, node, dataDir, nil, api.RuntimeDocker)
	a := assignment(node, "b1", "enc", dockerLaunch(testImage(t), map[string]string{"MODE": "logs"}), "")
	waitState(t, d, a, api.JobRunning, time.Minute)
	srv := logServer(t, d)
	poll.Eventually(t, 30*time.Second, "container output served", func() error {
		_, body := readAll(t, getLogs(t, t.Context(), srv, a.ID, "reader", nil))
		return poll.Check(strings.Contains(body, envLine("MODE", "logs")), "body %q", body)
	})
}

// TestTailOffset: where the last n lines start, across read blocks, with
// and without a final newline.
func TestTailOffset(t *testing.T) {
	long := strings.Repeat("x", 40<<10)
	cases := []struct {
		text string
		n    int
		want string
	}{
		{"", 3, ""},
		{"a\nb\nc\n", -1, "a\nb\nc\n"},
		{"a\nb\nc\n", 0, ""},
		{"a\nb\nc\n", 1, "c\n"},
		{"a\nb\nc\n", 2, "b\nc\n"},
		{"a\nb\nc", 1, "c"},
		{"a\nb\nc", 5, "a\nb\nc"},
		{"\n\n", 1, "\n"},
		{long + "\n" + long + "\nend\n", 2, long + "\nend\n"},
		{long + "\n" + long + "\nend\n", 3, long + "\n" + long + "\nend\n"},
	}
	for _, tc := range cases {
		r := bytes.NewReader([]byte(tc.text))
		off, err := tailOffset(r, int64(len(tc.text)), tc.n)
		if err != nil {
			t.Fatal(err)
		}
		if got := tc.text[off:]; got != tc.want {
			t.Errorf("tail %d of %d bytes: got %d bytes, want %d", tc.n, len(tc.text), len(got), len(tc.want))
		}
	}
}

// TestWorkerLogsCompose: a stack's output, each line prefixed with its
// service, stdout and stderr apart.
func TestWorkerLogsCompose(t *testing.T) {
	t.Parallel()
	requireCompose(t)
	node, dataDir, src := testNode(), t.TempDir(), &fakeTemplates{}
	t.Cleanup(func() { sweepNode(t, node) })
	ref := src.add("web", tarball(t, stackFiles(t, "")))
	d := newDispatcher(t, node, dataDir, src, api.RuntimeCompose)
	a := assignment(node, "b1", "web", composeLaunch(ref, map[string]string{"IMAGE": testImage(t), "GREETING": "hi"}), api.RuntimeCompose)
	waitState(t, d, a, api.JobRunning, 2*time.Minute)
	srv := logServer(t, d)
	poll.Eventually(t, time.Minute, "both streams served", func() error {
		_, out := readAll(t, getLogs(t, t.Context(), srv, a.ID, "reader", nil))
		_, errs := readAll(t, getLogs(t, t.Context(), srv, a.ID, "reader", url.Values{"stream": {"stderr"}}))
		return poll.Check(strings.Contains(out, "web | "+envLine("AMSERVER_ROLE", "primary")) && strings.Contains(errs, "side | side says hi"),
			"stdout %q, stderr %q", out, errs)
	})
}
