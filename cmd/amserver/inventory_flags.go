package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/amserver/amserver/api"
)

// inventoryFlags are a worker's inventory flags (DESIGN §8).
type inventoryFlags struct {
	capacity       float64
	utilizationCap float64
	cores          int
	memoryMiB      int64
	gpus           []string
	capabilities   []string
	labels         []string
	taints         []string
	driver         string
	runtimes       []string
	nodeKind       string
}

func (f *inventoryFlags) register(fl *pflag.FlagSet) {
	fl.Float64Var(&f.capacity, "capacity", 0, "worker: total compute capacity (defaults to the core count)")
	fl.Float64Var(&f.utilizationCap, "utilization-cap", 1, "worker: fraction of capacity placement may use, (0,1]")
	fl.IntVar(&f.cores, "cores", -1, "worker: cores that can be pinned (default: detected)")
	fl.Int64Var(&f.memoryMiB, "memory-mib", 0, "worker: memory in MiB that jobs' memory requests may reserve (0: MemTotal of /proc/meminfo)")
	fl.StringArrayVar(&f.gpus, "gpu", nil, "worker: a GPU as index:model:capacity (repeatable)")
	fl.StringArrayVar(&f.capabilities, "capability", nil, "worker: a capability as name:count[:key=value,...] (repeatable)")
	fl.StringArrayVar(&f.labels, "label", nil, "worker: a label key=value (repeatable)")
	fl.StringArrayVar(&f.taints, "taint", nil, "worker: a taint (repeatable)")
	fl.StringVar(&f.driver, "driver", "none", "worker: task driver, real (run each launch with its runtime: compose, docker, wasm, exec; exec is a synonym) or none")
	fl.StringArrayVar(&f.runtimes, "runtime", nil,
		"worker: a runtime the node runs, e.g. exec, docker, compose, wasm (repeatable; replaces detection)")
	fl.StringVar(&f.nodeKind, "node-kind", "", `worker: the node's kind, "" or proxmox (a Proxmox host runs pve-vm and pve-ct)`)
}

// spec builds the inventory the worker registers.
func (f *inventoryFlags) spec(pool, az, cloud string) (api.NodeSpec, error) {
	cores := f.cores
	if cores < 0 {
		cores = detectedCores()
	}
	capacity := f.capacity
	if capacity == 0 {
		capacity = float64(cores)
	}
	memory := f.memoryMiB
	if memory == 0 {
		memory = detectedMemoryMiB()
	}
	if f.nodeKind != "" && f.nodeKind != api.NodeKindProxmox {
		return api.NodeSpec{}, fmt.Errorf("--node-kind %q: want %s or nothing", f.nodeKind, api.NodeKindProxmox)
	}
	// The server checks the runtime names (and aliases) when the worker registers.
	n := api.NodeSpec{Pool: pool, TotalCapacity: capacity, UtilizationCap: f.utilizationCap, TotalCores: cores, Taints: f.taints,
		Runtimes: f.runtimes, Kind: f.nodeKind, TotalMemoryMiB: memory}
	labels, err := parseLabels(f.labels)
	if err != nil {
		return n, err
	}
	for k, v := range map[string]string{"az": az, "cloud": cloud} {
		if v != "" {
			labels[k] = v
		}
	}
	if len(labels) > 0 {
		n.Labels = labels
	}
	for _, g := range f.gpus {
		gpu, err := parseGPU(g)
		if err != nil {
			return n, err
		}
		n.GPUs = append(n.GPUs, gpu)
	}
	for _, c := range f.capabilities {
		capab, err := parseCapability(c)
		if err != nil {
			return n, err
		}
		n.Capabilities = append(n.Capabilities, capab)
	}
	return n, nil
}

func parseLabels(list []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--label %q: want key=value", kv)
		}
		out[k] = v
	}
	return out, nil
}

// parseGPU reads index:model:capacity.
func parseGPU(s string) (api.GPU, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return api.GPU{}, fmt.Errorf("--gpu %q: want index:model:capacity", s)
	}
	idx, err := strconv.Atoi(parts[0])
	if err != nil || idx < 0 {
		return api.GPU{}, fmt.Errorf("--gpu %q: index must be a non-negative integer", s)
	}
	capacity, err := strconv.ParseFloat(parts[2], 64)
	if err != nil || capacity <= 0 {
		return api.GPU{}, fmt.Errorf("--gpu %q: capacity must be a positive number", s)
	}
	return api.GPU{Index: idx, Model: parts[1], TotalCapacity: capacity}, nil
}

// parseCapability reads name:count[:key=value,...].
func parseCapability(s string) (api.Capability, error) {
	parts := strings.SplitN(s, ":", 3)
	if len(parts) < 2 || parts[0] == "" {
		return api.Capability{}, fmt.Errorf("--capability %q: want name:count[:key=value,...]", s)
	}
	count, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || count < 0 {
		return api.Capability{}, fmt.Errorf("--capability %q: count must be a non-negative integer", s)
	}
	c := api.Capability{Name: parts[0], Count: count}
	if len(parts) == 3 && parts[2] != "" {
		attrs, err := parseLabels(strings.Split(parts[2], ","))
		if err != nil {
			return c, fmt.Errorf("--capability %q: %w", s, err)
		}
		c.Attributes = attrs
	}
	return c, nil
}
