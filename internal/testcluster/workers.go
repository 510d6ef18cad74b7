package testcluster

import (
	"github.com/amserver/amserver/agent"
	"github.com/amserver/amserver/worker"
)

// StartWorker starts a worker with wc, joined to the cluster's gossip. A
// nil Join joins through every server; a Gossip without BindAddr becomes
// LoopbackGossip. Servers stays as given: a worker without any finds the
// servers' HTTP addresses through gossip. Workers need gossip, so a TCP
// cluster. A worker without HTTPAddr serves its logs on a loopback port.
func (c *Cluster) StartWorker(wc worker.Config) *worker.Worker {
	c.t.Helper()
	if !c.opts.tcp {
		c.t.Fatal("testcluster: workers find the servers through gossip; build the cluster with TCP()")
	}
	if wc.Gossip.BindAddr == "" {
		wc.Gossip = LoopbackGossip()
	}
	if wc.HTTPAddr == "" {
		wc.HTTPAddr = "127.0.0.1:0"
	}
	if wc.Join == nil {
		wc.Join = c.gossipAddrs()
	}
	w, err := worker.New(wc)
	if err != nil {
		c.t.Fatalf("testcluster: worker %s: %v", wc.NodeID, err)
	}
	c.workers = append(c.workers, w) // Stop stops it, even if Start fails
	if err := w.Start(c.t.Context()); err != nil {
		c.t.Fatalf("testcluster: start worker %s: %v", wc.NodeID, err)
	}
	return w
}

// StartWorkers starts n workers shaped like the dev cluster's
// (agent.DevWorkerConfig: worker-1, worker-2… in pool default over 3 AZs),
// told the first server's HTTP address as the dev cluster does. configure,
// when set, adjusts each (a driver, say).
func (c *Cluster) StartWorkers(n int, configure func(*worker.Config)) []*worker.Worker {
	c.t.Helper()
	var out []*worker.Worker
	for range n {
		wc := agent.DevWorkerConfig(c.devNext)
		c.devNext++
		wc.Servers = []string{c.servers[0].HTTPURL()}
		if configure != nil {
			configure(&wc)
		}
		out = append(out, c.StartWorker(wc))
	}
	return out
}
