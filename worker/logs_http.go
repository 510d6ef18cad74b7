package worker

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/amserver/amserver/api"
)

// logPoll is how often a follower looks for new output.
const logPoll = 200 * time.Millisecond

// listenLogs opens the worker's HTTP listener (Config.HTTPAddr) and
// returns the URL gossip publishes for it. With a certificate the worker
// serves HTTPS with it; servers verify it as they verify each other
// (certs.ServerClient), so a worker that serves logs over TLS needs a
// server certificate of the cluster's CA.
func (w *Worker) listenLogs() (string, error) {
	ln, err := net.Listen("tcp", w.cfg.HTTPAddr)
	if err != nil {
		return "", fmt.Errorf("worker http listener: %w", err)
	}
	scheme := "http://"
	if w.tls != nil && w.tls.Certificate() != nil {
		ln = tls.NewListener(ln, w.tls.HTTPServer())
		scheme = "https://"
		// The documented client certificate is enough for the API, not for
		// serving: say so now, not at each refused log request.
		if err := w.tls.CheckServes(); err != nil {
			w.logger.Warn("servers will refuse this worker's log endpoint (amserver logs: 502 workerUnreachable): its certificate is not a server certificate of the CA",
				"err", err, "fix", "give the worker a server certificate (amserver tls cert create --server)")
		}
	}
	w.httpLn = ln
	adv := w.cfg.HTTPAdvertise
	if adv == "" {
		host, port, _ := net.SplitHostPort(ln.Addr().String())
		if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
			if w.cfg.Gossip.AdvertiseAddr != "" {
				host = w.cfg.Gossip.AdvertiseAddr
			}
		}
		adv = net.JoinHostPort(host, port)
	}
	return scheme + adv, nil
}

// HTTPURL is where the worker serves its assignments' logs ("" when it
// serves none).
func (w *Worker) HTTPURL() string { return w.httpURL }

// serveHTTP serves the log endpoint until ctx ends.
func (w *Worker) serveHTTP(ctx context.Context) {
	srv := &http.Server{Handler: w.httpHandler(), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() {
		<-ctx.Done()
		_ = srv.Close() // followers end with their requests' contexts
	}()
	if err := srv.Serve(w.httpLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
		w.logger.Error("worker http server stopped", "err", err)
	}
}

// httpHandler routes the worker's HTTP API: its assignments' logs.
func (w *Worker) httpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/assignments/{id}/logs", w.serveLogs)
	return mux
}

// serveLogs is GET /v1/assignments/{id}/logs on the worker: the output of
// an assignment this worker runs, for a caller whose token may read.
func (w *Worker) serveLogs(rw http.ResponseWriter, r *http.Request) {
	opts, err := api.ParseLogOptions(r.URL.Query())
	if err != nil {
		writeError(rw, http.StatusBadRequest, api.CodeBadRequest, err.Error())
		return
	}
	if err := w.checkToken(r.Context(), requestToken(r)); err != nil {
		var e *api.Error
		if errors.As(err, &e) && (e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden) {
			writeError(rw, e.Status, e.Code, e.Message)
			return
		}
		writeError(rw, http.StatusServiceUnavailable, api.CodeNoLeader, "cannot check the token with a server: "+err.Error())
		return
	}
	id := r.PathValue("id")
	src, ok := w.cfg.Driver.(logSource)
	dir, _, held := "", false, false
	if ok {
		dir, _, held = src.taskLog(id)
	}
	if !held {
		writeError(rw, http.StatusNotFound, api.CodeNotFound, fmt.Sprintf("assignment %q does not run on node %q", id, w.cfg.NodeID))
		return
	}
	path := ""
	if dir != "" {
		path = dir + "/" + map[string]string{api.LogStdout: stdoutLog, api.LogStderr: stderrLog}[opts.Stream]
	}
	h := rw.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-cache")
	rw.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(rw)
	lr := &logReader{
		path: path, every: logPoll, w: rw, flush: func() { _ = rc.Flush() },
		state: func() (bool, bool) {
			if w.isRestarting(id) {
				return true, true // stopped for a new generation: its next run appends to the same files
			}
			_, live, held := src.taskLog(id)
			return live, held
		},
	}
	if err := lr.send(r.Context(), opts.Tail, opts.Follow); err != nil && r.Context().Err() == nil {
		w.logger.Debug("sending logs ended", "assignment", id, "err", err)
	}
}

// requestToken is the token a request carries, as servers read it.
func requestToken(r *http.Request) string {
	if t := r.Header.Get(api.HeaderToken); t != "" {
		return t
	}
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	return ""
}

// checkReader asks a server whether token may read the cluster: the
// server's own ACL check of GET /v1/status/leader (a read route) decides,
// so the worker keeps no token state and a revoked token stops working at
// once. A noLeader answer has passed the ACL check already.
func (w *Worker) checkReader(ctx context.Context, token string) error {
	last := errors.New("no server known yet")
	for _, addr := range w.servers() {
		c, err := w.clientAs(addr, token)
		if err != nil {
			last = err
			continue
		}
		_, err = c.Leader(ctx)
		var e *api.Error
		switch {
		case err == nil, api.IsCode(err, api.CodeNoLeader):
			return nil
		case errors.As(err, &e):
			return err
		}
		last = err
	}
	return last
}

func writeError(rw http.ResponseWriter, status int, code, msg string) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(status)
	_ = json.NewEncoder(rw).Encode(api.ErrorBody{Error: &api.Error{Code: code, Message: msg, Errors: []api.Finding{}, Warnings: []api.Finding{}}})
}
