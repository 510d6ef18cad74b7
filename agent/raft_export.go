package agent

import "github.com/hashicorp/raft"

// RaftStores are the Raft log, stable and snapshot stores of one server.
type RaftStores struct {
	Logs   raft.LogStore
	Stable raft.StableStore
	Snaps  raft.SnapshotStore
	// Close closes what must be closed with the stores (the bolt file).
	Close func() error
}

// RaftConfig returns the Raft configuration a server with cfg runs with.
// It is exported so that benchmarks can run a bare Raft cluster on equal
// terms with amserver (bench/, issue 7); servers never call it.
func RaftConfig(cfg Config) (*raft.Config, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	return raftConfig(&cfg, nil), nil
}

// OpenRaftStores opens the stores a server with cfg would open (bolt with a
// log cache on disk when cfg.DataDir is set), for the same benchmarks.
func OpenRaftStores(cfg Config) (*RaftStores, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	st, err := openStores(&cfg)
	if err != nil {
		return nil, err
	}
	return &RaftStores{Logs: st.logs, Stable: st.stable, Snaps: st.snaps, Close: st.close}, nil
}

// NewRaftTransport opens the TCP transport a server with cfg would use,
// with mutual TLS when cfg.TLS names a certificate.
func NewRaftTransport(cfg Config) (raft.Transport, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	tc, err := cfg.loadTLS()
	if err != nil {
		return nil, err
	}
	t, _, err := newTransport(&cfg, tc)
	return t, err
}
