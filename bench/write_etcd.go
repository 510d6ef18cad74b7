package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

func etcdWriteSystem() writeSystem {
	return writeSystem{
		name: "etcd", verb: "puts/s",
		note: "clientv3 Put (one client, all 3 endpoints), 3 embedded etcd members on loopback, defaults (fsync on)",
		start: func(ctx context.Context, o Options, dir string, _ int) (writeTarget, error) {
			return startEtcdWrite(ctx, dir)
		},
	}
}

// etcdWrite is an embedded 3-member etcd cluster and one client.
type etcdWrite struct {
	members []*embed.Etcd
	client  *clientv3.Client
}

// etcdPorts reserves n free loopback ports. The listeners close before
// etcd binds them; on a quiet loopback nothing takes them in between.
func etcdPorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("reserve a port: %w", err)
		}
		lns = append(lns, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func localURL(port int) url.URL {
	return url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", port)}
}

// etcdConfigs makes one embed.Config per member: each its own data dir and
// peer/client URLs, all with the same initial cluster. Everything else,
// fsync included, is etcd's default.
func etcdConfigs(dir string) ([]*embed.Config, []string, error) {
	ports, err := etcdPorts(6)
	if err != nil {
		return nil, nil, err
	}
	var initial, endpoints []string
	for i := range 3 {
		peer := localURL(ports[2*i])
		initial = append(initial, fmt.Sprintf("e%d=%s", i+1, peer.String()))
		client := localURL(ports[2*i+1])
		endpoints = append(endpoints, client.String())
	}
	var cfgs []*embed.Config
	for i := range 3 {
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("e%d", i+1)
		cfg.Dir = filepath.Join(dir, cfg.Name)
		peer, client := localURL(ports[2*i]), localURL(ports[2*i+1])
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
		cfg.InitialCluster = strings.Join(initial, ",")
		cfg.InitialClusterToken = "ambench"
		cfg.ClusterState = embed.ClusterStateFlagNew
		// Silent: a member's own errors surface through StartEtcd and Err(),
		// and closing a member logs harmless accept errors at error level.
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		cfgs = append(cfgs, cfg)
	}
	return cfgs, endpoints, nil
}

// startEtcdWrite starts the cluster, on fresh ports and a fresh directory
// up to three times: a port reserved by etcdPorts can be taken by another
// process before etcd binds it.
func startEtcdWrite(ctx context.Context, dir string) (*etcdWrite, error) {
	var errs []error
	for attempt := range 3 {
		e, endpoints, err := startEtcdMembers(filepath.Join(dir, fmt.Sprint(attempt)))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := e.waitReady(ctx); err != nil {
			return nil, errors.Join(err, e.close())
		}
		return e.connect(endpoints)
	}
	return nil, errors.Join(errs...)
}

func startEtcdMembers(dir string) (*etcdWrite, []string, error) {
	cfgs, endpoints, err := etcdConfigs(dir)
	if err != nil {
		return nil, nil, err
	}
	e := &etcdWrite{}
	for _, cfg := range cfgs {
		m, err := embed.StartEtcd(cfg)
		if err != nil {
			return nil, nil, errors.Join(fmt.Errorf("start etcd member %s: %w", cfg.Name, err), e.close())
		}
		e.members = append(e.members, m)
	}
	return e, endpoints, nil
}

func (e *etcdWrite) connect(endpoints []string) (*etcdWrite, error) {
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("etcd client: %w", err), e.close())
	}
	e.client = c
	return e, nil
}

// waitReady waits until every member has joined the cluster and serves.
func (e *etcdWrite) waitReady(ctx context.Context) error {
	timeout := time.NewTimer(60 * time.Second)
	defer timeout.Stop()
	for _, m := range e.members {
		select {
		case <-m.Server.ReadyNotify():
		case err := <-m.Err():
			return fmt.Errorf("etcd member failed while starting: %w", err)
		case <-timeout.C:
			return errors.New("etcd cluster not ready within 60s")
		case <-ctx.Done():
			return fmt.Errorf("waiting for etcd: %w", ctx.Err())
		}
	}
	return nil
}

func (e *etcdWrite) prepare(int) error { return nil }

// write puts the bundle's JSON under its id, as a store of bundles would.
func (e *etcdWrite) write(ctx context.Context, _ int, seq int64) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	spec := writeSpecJSON(seq)
	if _, err := e.client.Put(ctx, fmt.Sprintf("/bundles/b%09d", seq), string(spec)); err != nil {
		return fmt.Errorf("etcd put: %w", err)
	}
	return nil
}

func (e *etcdWrite) close() error {
	var err error
	if e.client != nil {
		if cerr := e.client.Close(); cerr != nil {
			err = fmt.Errorf("close etcd client: %w", cerr)
		}
	}
	for _, m := range e.members {
		m.Close()
	}
	return err
}
