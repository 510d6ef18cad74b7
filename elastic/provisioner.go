// Package elastic talks to elastic pools' provisioners (docs/provisioner.md):
// the webhook and command kinds behind one Provisioner interface, and the
// calls a leader's elastic duty starts for its replicated spawns, each
// retried with backoff on its own goroutine. Deciding what to provision is
// the leader's (package leader); this package only carries it out.
package elastic

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
)

// Provisioner operations (docs/provisioner.md).
const (
	ProvisionCreate = "create"
	ProvisionDelete = "delete"
)

// ProvisionRequest is what an elastic pool's provisioner receives, as JSON
// (the HTTP body, or AMSERVER_PROVISION_REQUEST for a command). RequestID
// makes it idempotent: a create retried with the same id, by this leader or
// a new one, must not make a second node.
type ProvisionRequest struct {
	Op           string             `json:"op"`
	RequestID    string             `json:"requestId"`
	Pool         string             `json:"pool"`
	InstanceType string             `json:"instanceType"`
	NodeID       string             `json:"nodeId"`
	Join         []string           `json:"join,omitempty"`    // servers' gossip addresses
	Servers      []string           `json:"servers,omitempty"` // servers' HTTP addresses
	Inventory    ProvisionInventory `json:"inventory"`
}

// ProvisionInventory is the instance type in API units: what the worker
// should register (amserver agent --worker --capacity ... --cores ...).
type ProvisionInventory struct {
	TotalCapacity float64 `json:"totalCapacity"`
	TotalCores    int     `json:"totalCores"`
	// TotalMemoryMiB is what the node should register (--memory-mib).
	TotalMemoryMiB int64            `json:"totalMemoryMiB,omitempty"`
	GPUs           []api.GPU        `json:"gpus,omitempty"`
	Capabilities   []api.Capability `json:"capabilities,omitempty"`
	// Labels and Taints are the instance type's: the worker should
	// register them (--label key=value, --taint t); the server adds them
	// when the node registers in any case.
	Labels map[string]string `json:"labels,omitempty"`
	Taints []string          `json:"taints,omitempty"`
}

// Provisioner obtains and gives back nodes for an elastic pool. Both calls
// must be idempotent: the leader retries them, and a new leader repeats
// calls whose outcome it cannot know.
type Provisioner interface {
	Create(ctx context.Context, req *ProvisionRequest) error
	Delete(ctx context.Context, req *ProvisionRequest) error
}

// errPermanent marks a provisioner answer that retrying soon will not change
// (a 4xx): the call is still retried, at the slowest pace.
var errPermanent = errors.New("permanent provisioner error")

// newProvisioner returns the provisioner a pool configures, or nil when it
// has none this server may call (Policy.Problem).
func newProvisioner(p *fsm.Provisioner, hc *http.Client, policy Policy) Provisioner {
	if policy.Problem(p) != "" {
		return nil
	}
	if p.URL != "" {
		return &httpProvisioner{url: strings.TrimRight(p.URL, "/"), client: hc}
	}
	return &execProvisioner{command: slices.Clone(p.Command)}
}

// provisionRequest builds the request for a spawn.
func provisionRequest(op string, sp *fsm.Spawn, join, servers []string) *ProvisionRequest {
	it := sp.InstanceType
	inv := ProvisionInventory{TotalCapacity: fromMilli(it.TotalCapacity), TotalCores: it.TotalCores, TotalMemoryMiB: it.TotalMemoryMiB,
		Labels: maps.Clone(it.Labels), Taints: slices.Clone(it.Taints)}
	for _, g := range it.GPUs {
		inv.GPUs = append(inv.GPUs, api.GPU{Index: g.Index, Model: g.Model, TotalCapacity: fromMilli(g.Capacity)})
	}
	for _, c := range it.Capabilities {
		inv.Capabilities = append(inv.Capabilities, api.Capability{Name: c.Name, Count: c.Count, Attributes: maps.Clone(c.Attributes)})
	}
	return &ProvisionRequest{
		Op: op, RequestID: sp.ID, Pool: sp.Pool, InstanceType: it.Name, NodeID: sp.NodeID,
		Join: slices.Clone(join), Servers: slices.Clone(servers), Inventory: inv,
	}
}

func fromMilli(m int64) float64 { return float64(m) / 1000 }

// env renders the request as the exec provisioner's environment: the whole
// JSON plus one variable per field, in the worker's flag syntax.
func (r *ProvisionRequest) env(raw []byte) []string {
	gpus := make([]string, len(r.Inventory.GPUs))
	for i, g := range r.Inventory.GPUs {
		gpus[i] = fmt.Sprintf("%d:%s:%s", g.Index, g.Model, formatFloat(g.TotalCapacity))
	}
	caps := make([]string, len(r.Inventory.Capabilities))
	for i, c := range r.Inventory.Capabilities {
		caps[i] = c.Name + ":" + strconv.FormatInt(c.Count, 10)
		if len(c.Attributes) > 0 {
			attrs := make([]string, 0, len(c.Attributes))
			for _, k := range slices.Sorted(maps.Keys(c.Attributes)) {
				attrs = append(attrs, k+"="+c.Attributes[k])
			}
			caps[i] += ":" + strings.Join(attrs, ",")
		}
	}
	labels := make([]string, 0, len(r.Inventory.Labels))
	for _, k := range slices.Sorted(maps.Keys(r.Inventory.Labels)) {
		labels = append(labels, k+"="+r.Inventory.Labels[k])
	}
	const p = "AMSERVER_PROVISION_"
	return []string{
		p + "OP=" + r.Op,
		p + "REQUEST=" + string(raw),
		p + "REQUEST_ID=" + r.RequestID,
		p + "POOL=" + r.Pool,
		p + "INSTANCE_TYPE=" + r.InstanceType,
		p + "NODE_ID=" + r.NodeID,
		p + "JOIN=" + strings.Join(r.Join, ","),
		p + "SERVERS=" + strings.Join(r.Servers, ","),
		p + "CAPACITY=" + formatFloat(r.Inventory.TotalCapacity),
		p + "CORES=" + strconv.Itoa(r.Inventory.TotalCores),
		p + "MEMORY_MIB=" + strconv.FormatInt(r.Inventory.TotalMemoryMiB, 10),
		p + "GPUS=" + strings.Join(gpus, " "),
		p + "CAPABILITIES=" + strings.Join(caps, " "),
		p + "LABELS=" + strings.Join(labels, " "),
		p + "TAINTS=" + strings.Join(r.Inventory.Taints, " "),
	}
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
