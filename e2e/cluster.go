//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/amserver/amserver/api"
)

// The suite runs the deployment a user gets from `docker-compose up`: the
// repository's compose file, plus an overlay for five servers. Paths are
// relative to this package's directory, where `go test` runs.
const (
	baseComposeFile = "../docker-compose.yml"
	fiveComposeFile = "compose.5servers.yml"
	projectPrefix   = "amserver-e2e-"
	// workerCount is the number of workers in docker-compose.yml.
	workerCount = 6
	// composeLabel is how docker-compose tags what it creates.
	composeLabel = "com.docker.compose.project"
)

// Node is one container of the deployment.
type Node struct {
	// ID is the amserver node id, which the compose files set to the
	// service name (server-1, worker-4).
	ID        string
	Container string
	// IP is the container's address on the compose network.
	IP string
	// HTTP is the API published on the host loopback (servers only).
	HTTP string
}

// Cluster is one docker-compose project of amserver servers and workers.
type Cluster struct {
	Project string
	Servers []Node
	Workers []Node
	files   []string
	logf    func(format string, args ...any)
	clients map[string]*api.Client // by node id
	// sec, when set, runs the deployment with ACLs, TLS and gossip
	// encryption (compose.secure.yml).
	sec *Security
}

// composeFiles lists the compose files for a cluster of n servers.
func composeFiles(n int) ([]string, error) {
	switch n {
	case 3:
		return []string{baseComposeFile}, nil
	case 5:
		return []string{baseComposeFile, fiveComposeFile}, nil
	}
	return nil, fmt.Errorf("e2e: no compose deployment for %d servers", n)
}

// StartCluster removes leftovers of earlier runs, brings up a fresh
// project of n servers (plus overlays, e.g. compose.plant.yml) and waits
// until it is healthy. Down tears it down, volumes too.
func StartCluster(ctx context.Context, logf func(string, ...any), n int, sec *Security, overlays ...string) (*Cluster, error) {
	files, err := composeFiles(n)
	if err != nil {
		return nil, err
	}
	files = append(files, overlays...)
	if sec != nil {
		files = append(files, secureComposeFile)
		if n == 5 {
			files = append(files, secure5ComposeFile)
		}
	}
	if err := removeLeftovers(ctx, logf); err != nil {
		return nil, err
	}
	c := &Cluster{
		Project: fmt.Sprintf("%s%s-%d", projectPrefix, time.Now().Format("20060102t150405"), os.Getpid()),
		files:   files,
		logf:    logf,
		sec:     sec,
	}
	logf("cluster %s: up with %d servers", c.Project, n)
	if _, err := c.compose(ctx, "up", "-d"); err != nil {
		return c, fmt.Errorf("e2e: compose up (is another amserver deployment using 172.28.0.0/24 or ports 7070-7110?): %w", err)
	}
	if err := c.inspect(ctx, n); err != nil {
		return c, err
	}
	if err := c.WaitHealthy(ctx, 2*time.Minute); err != nil {
		return c, fmt.Errorf("e2e: cluster %s never became healthy: %w", c.Project, err)
	}
	return c, nil
}

func (c *Cluster) compose(ctx context.Context, args ...string) (string, error) {
	return c.composeWith(ctx, c.files, args...)
}

// composeWith runs docker-compose on the project with other files than the
// cluster's own (its files plus an overlay that knows a spare server).
func (c *Cluster) composeWith(ctx context.Context, files []string, args ...string) (string, error) {
	var env []string
	if c.sec != nil {
		env = c.sec.Env()
	}
	return runEnv(ctx, env, "docker-compose", composeArgs(c.Project, files, args...)...)
}

func composeArgs(project string, files []string, args ...string) []string {
	out := []string{"-p", project}
	for _, f := range files {
		out = append(out, "-f", f)
	}
	return append(out, args...)
}

// Down removes the project's containers, network and volumes, unless
// AMSERVER_E2E_KEEP=1 asks to leave them up for a post-mortem.
func (c *Cluster) Down(ctx context.Context) error {
	if os.Getenv("AMSERVER_E2E_KEEP") == "1" {
		c.logf("cluster %s kept up (AMSERVER_E2E_KEEP=1); remove with: docker-compose %s down -v",
			c.Project, strings.Join(composeArgs(c.Project, c.files), " "))
		return nil
	}
	// A short stop timeout: the data is thrown away anyway.
	if _, err := c.compose(ctx, "down", "-v", "-t", "2", "--remove-orphans"); err != nil {
		return fmt.Errorf("e2e: compose down %s: %w", c.Project, err)
	}
	return nil
}

// removeLeftovers tears down every project an earlier run left behind (a
// crash, a timeout, AMSERVER_E2E_KEEP=1): they hold the fixed subnet and
// the published ports this run needs.
func removeLeftovers(ctx context.Context, logf func(string, ...any)) error {
	projects := map[string]bool{}
	format := fmt.Sprintf("{{.Label %q}}", composeLabel)
	for _, kind := range []string{"container", "network", "volume"} {
		args := []string{kind, "ls", "--filter", "label=" + composeLabel, "--format", format}
		if kind == "container" {
			args = append(args, "-a")
		}
		out, err := docker(ctx, args...)
		if err != nil {
			return fmt.Errorf("e2e: list leftover %ss: %w", kind, err)
		}
		for p := range strings.FieldsSeq(out) {
			if strings.HasPrefix(p, projectPrefix) {
				projects[p] = true
			}
		}
	}
	// The five-server file set names every service either size may have.
	files, _ := composeFiles(5)
	for p := range projects {
		logf("removing leftover project %s", p)
		if _, err := run(ctx, "docker-compose", composeArgs(p, files, "down", "-v", "-t", "1", "--remove-orphans")...); err != nil {
			return fmt.Errorf("e2e: remove leftover project %s: %w", p, err)
		}
	}
	return nil
}

// inspectInfo is the part of `docker inspect` the harness reads back.
type inspectInfo struct {
	Name   string
	Config struct {
		Labels map[string]string
	}
	NetworkSettings struct {
		Networks map[string]struct{ IPAddress string }
		Ports    map[string][]struct{ HostIp, HostPort string }
	}
}

// inspect reads back the addresses of every container of the project.
func (c *Cluster) inspect(ctx context.Context, servers int) error {
	ids, err := docker(ctx, "ps", "-a", "-q", "--filter", "label="+composeLabel+"="+c.Project)
	if err != nil {
		return fmt.Errorf("e2e: list containers: %w", err)
	}
	out, err := docker(ctx, append([]string{"inspect"}, strings.Fields(ids)...)...)
	if err != nil {
		return fmt.Errorf("e2e: inspect containers: %w", err)
	}
	var infos []inspectInfo
	if err := json.Unmarshal([]byte(out), &infos); err != nil {
		return fmt.Errorf("e2e: decode docker inspect: %w", err)
	}
	c.Servers, c.Workers = nil, nil
	for _, in := range infos {
		n := Node{ID: in.Config.Labels["com.docker.compose.service"], Container: strings.TrimPrefix(in.Name, "/")}
		for _, nw := range in.NetworkSettings.Networks {
			n.IP = nw.IPAddress
		}
		if p := in.NetworkSettings.Ports["7070/tcp"]; len(p) > 0 {
			n.HTTP = c.scheme() + p[0].HostIp + ":" + p[0].HostPort
		}
		switch {
		case strings.HasPrefix(n.ID, "server-") && n.HTTP != "" && n.IP != "":
			c.Servers = append(c.Servers, n)
		case strings.HasPrefix(n.ID, "worker-"):
			c.Workers = append(c.Workers, n)
		default:
			return fmt.Errorf("e2e: container %s: no address (ip %q, api %q)", n.Container, n.IP, n.HTTP)
		}
	}
	byID := func(a, b Node) int { return strings.Compare(a.ID, b.ID) }
	slices.SortFunc(c.Servers, byID)
	slices.SortFunc(c.Workers, byID)
	if len(c.Servers) != servers || len(c.Workers) != workerCount {
		return fmt.Errorf("e2e: project %s has %d servers and %d workers, want %d and %d",
			c.Project, len(c.Servers), len(c.Workers), servers, workerCount)
	}
	c.clients = map[string]*api.Client{}
	for _, s := range c.Servers {
		// No retries and a hard timeout: the harness polls itself, and a
		// paused server must not hang it.
		opts := append([]api.Option{api.WithMaxRetries(0), api.WithHTTPClient(&http.Client{Timeout: 5 * time.Second})},
			c.ClientOptions()...)
		cl, err := api.New(s.HTTP, opts...)
		if err != nil {
			return fmt.Errorf("e2e: client for %s: %w", s.ID, err)
		}
		c.clients[s.ID] = cl
	}
	return nil
}

func (c *Cluster) scheme() string {
	if c.sec != nil {
		return "https://"
	}
	return "http://"
}

// ClientOptions are what every client of this deployment needs on top of
// its own settings: for a secure one, the CA, a client certificate and the
// management token.
func (c *Cluster) ClientOptions() []api.Option {
	if c.sec == nil {
		return nil
	}
	return c.sec.ClientOptions()
}

// HTTPAddrs are the published API addresses of all servers.
func (c *Cluster) HTTPAddrs() []string {
	out := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		out[i] = s.HTTP
	}
	return out
}

// Client is the harness's API client for server id.
func (c *Cluster) Client(id string) *api.Client { return c.clients[id] }

// Server returns the server with amserver node id id.
func (c *Cluster) Server(id string) (Node, error) {
	for _, s := range c.Servers {
		if s.ID == id {
			return s, nil
		}
	}
	return Node{}, fmt.Errorf("e2e: no server %q in %s", id, c.Project)
}

// Others returns the servers except the given one.
func (c *Cluster) Others(id string) []Node {
	return slices.DeleteFunc(slices.Clone(c.Servers), func(n Node) bool { return n.ID == id })
}

// errNotYet marks a condition that polling may still see become true.
var errNotYet = errors.New("not yet")
