package ledger

import (
	"fmt"
	"reflect"
	"slices"

	"pgregory.net/rapid"
)

// Generators and an independent invariant checker for the property tests.
// Domains are small on purpose so that collisions (same key, same core,
// same device, full pools) happen often.

var (
	genModels   = []string{"a", "b"}
	genCapNames = []string{"nic", "lic", "fpga"}
)

func genInventory(t *rapid.T, label string) Inventory {
	// rapid leans towards small draws; subtracting from the top leans
	// inventories towards roomy nodes so that reservations succeed often.
	inv := Inventory{
		Allocatable: (40 - rapid.Int64Range(0, 40).Draw(t, label+".alloc")) * 100,
		TotalCores:  20 - rapid.IntRange(0, 20).Draw(t, label+".cores"),
		// Memory in 256 MiB steps; a node without memory (0) must refuse
		// every memory request.
		TotalMemoryMiB: (16 - rapid.Int64Range(0, 16).Draw(t, label+".mem")) * 256,
	}
	if rapid.Bool().Draw(t, label+".manycores") {
		inv.TotalCores += 50 // spans two bitset words
	}
	for i := range 4 - rapid.IntRange(0, 4).Draw(t, label+".gpus") {
		inv.GPUs = append(inv.GPUs, GPU{
			Index:    i,
			Model:    rapid.SampledFrom(genModels).Draw(t, label+".model"),
			Capacity: (10 - rapid.Int64Range(0, 10).Draw(t, label+".gpucap")) * 100,
		})
	}
	for _, name := range genCapNames {
		if rapid.IntRange(0, 3).Draw(t, label+".lacks."+name) == 3 {
			continue
		}
		c := Capability{Name: name, Count: 3 - rapid.Int64Range(0, 3).Draw(t, label+".count")}
		if rapid.Bool().Draw(t, label+".attr") {
			c.Attributes = map[string]string{"v": rapid.SampledFrom([]string{"1", "2"}).Draw(t, label+".v")}
		}
		inv.Capabilities = append(inv.Capabilities, c)
	}
	return inv
}

func genCaps(t *rapid.T) PoolCaps {
	return PoolCaps{
		MaxCapacity:  rapid.Int64Range(0, 30).Draw(t, "pool.maxcap") * 100,
		MaxCores:     rapid.IntRange(0, 16).Draw(t, "pool.maxcores"),
		MaxMemoryMiB: rapid.Int64Range(0, 24).Draw(t, "pool.maxmem") * 256,
	}
}

func genKey(t *rapid.T) Key {
	return Key{
		Bundle:  rapid.SampledFrom([]string{"b0", "b1"}).Draw(t, "bundle"),
		Replica: rapid.IntRange(0, 1).Draw(t, "replica"),
		Job:     rapid.SampledFrom([]string{"j0", "j1", "j2"}).Draw(t, "job"),
	}
}

func genRequest(t *rapid.T) Request {
	req := Request{
		Capacity:  rapid.Int64Range(0, 15).Draw(t, "req.cap") * 100,
		Cores:     rapid.IntRange(0, 12).Draw(t, "req.cores"),
		GPUModel:  rapid.SampledFrom([]string{"", "a", "b", "c"}).Draw(t, "req.model"),
		MemoryMiB: rapid.Int64Range(0, 8).Draw(t, "req.mem") * 256,
	}
	if req.MemoryMiB > 0 && rapid.Bool().Draw(t, "req.limited") {
		req.MemoryLimitMiB = req.MemoryMiB + rapid.Int64Range(0, 4).Draw(t, "req.burst")*256
	}
	if rapid.IntRange(0, 19).Draw(t, "req.negmem") == 19 { // invalid on purpose
		req.MemoryMiB = -1
	}
	switch rapid.IntRange(0, 9).Draw(t, "req.gpu") {
	case 5, 6:
		req.GPUCapacity = rapid.Int64Range(1, 8).Draw(t, "req.share") * 100
	case 7, 8:
		req.ExclusiveGPUs = rapid.IntRange(1, 3).Draw(t, "req.excl")
	case 9: // invalid on purpose
		req.GPUCapacity, req.ExclusiveGPUs = 100, 1
	}
	for range rapid.IntRange(0, 2).Draw(t, "req.ncaps") {
		cr := CapabilityRequest{
			Name:  rapid.SampledFrom(genCapNames).Draw(t, "req.capname"),
			Count: rapid.Int64Range(0, 2).Draw(t, "req.capcount"),
		}
		if rapid.IntRange(0, 9).Draw(t, "req.unknowncap") == 9 {
			cr.Name = "x"
		}
		if rapid.Bool().Draw(t, "req.match") {
			cr.AttributeMatches = map[string]string{"v": rapid.SampledFrom([]string{"1", "2"}).Draw(t, "req.v")}
		}
		req.Capabilities = append(req.Capabilities, cr)
	}
	return req
}

// genGrant makes a hand-made grant that is often malformed or over-committing.
// Each kind of defect is a separate rare roll so that, despite rapid's lean
// towards small draws, most grants are well formed and only one thing is off.
func genGrant(t *rapid.T) Grant {
	g := Grant{
		Capacity: rapid.Int64Range(0, 20).Draw(t, "g.cap") * 100,
		Cores:    rapid.SliceOfN(rapid.IntRange(0, 71), 0, 4).Draw(t, "g.cores"),
	}
	if rapid.IntRange(0, 9).Draw(t, "g.negcap") == 9 {
		g.Capacity = -100
	}
	g.MemoryMiB = rapid.Int64Range(0, 12).Draw(t, "g.mem") * 256
	if rapid.IntRange(0, 9).Draw(t, "g.negmem") == 9 {
		g.MemoryMiB = -256
	}
	if rapid.IntRange(0, 9).Draw(t, "g.negcore") == 9 {
		g.Cores = append(g.Cores, -1)
	}
	share := &GPUShare{
		Index:    rapid.IntRange(0, 4).Draw(t, "g.shareIdx"),
		Capacity: rapid.Int64Range(0, 10).Draw(t, "g.shareCap") * 100,
	}
	excl := rapid.SliceOfN(rapid.IntRange(0, 4), 1, 2).Draw(t, "g.excl")
	switch rapid.IntRange(0, 9).Draw(t, "g.gpu") {
	case 5, 6:
		g.GPU = share
	case 7, 8:
		g.ExclusiveGPUs = excl
	case 9:
		g.GPU, g.ExclusiveGPUs = share, excl
	}
	for range rapid.IntRange(0, 2).Draw(t, "g.ncaps") {
		g.Capabilities = append(g.Capabilities, CapabilityCount{
			Name:  rapid.SampledFrom(append(genCapNames, "x")).Draw(t, "g.capname"),
			Count: rapid.Int64Range(0, 3).Draw(t, "g.capcount"),
		})
	}
	return g
}

// grantsViolation checks the node invariants of DESIGN §2.4 straight from
// the grants, without Usage, Check or Fits, so it can serve as an oracle.
func grantsViolation(inv Inventory, grants []Grant) string {
	var capacity, memory int64
	cores := map[int]bool{}
	shares := map[int]int64{}
	users := map[int]int{}
	exclusive := map[int]bool{}
	held := map[string]int64{}
	for _, g := range grants {
		if g.Capacity < 0 {
			return "negative capacity"
		}
		capacity += g.Capacity
		if g.MemoryMiB < 0 {
			return "negative memory"
		}
		memory += g.MemoryMiB
		for _, c := range g.Cores {
			if c < 0 || c >= inv.TotalCores || cores[c] {
				return fmt.Sprintf("core %d out of range or pinned twice", c)
			}
			cores[c] = true
		}
		if g.GPU != nil && len(g.ExclusiveGPUs) > 0 {
			return "share and exclusive in one grant"
		}
		if s := g.GPU; s != nil {
			if _, ok := findGPU(inv, s.Index); !ok || s.Capacity <= 0 {
				return fmt.Sprintf("bad share %+v", *s)
			}
			shares[s.Index] += s.Capacity
			users[s.Index]++
		}
		for _, i := range g.ExclusiveGPUs {
			if _, ok := findGPU(inv, i); !ok || exclusive[i] {
				return fmt.Sprintf("bad exclusive gpu %d", i)
			}
			exclusive[i] = true
			users[i]++
		}
		seen := map[string]bool{}
		for _, c := range g.Capabilities {
			if _, ok := findCapability(inv, c.Name); !ok || c.Count <= 0 || seen[c.Name] {
				return fmt.Sprintf("bad capability %+v", c)
			}
			seen[c.Name] = true
			held[c.Name] += c.Count
		}
	}
	if capacity > inv.Allocatable {
		return fmt.Sprintf("capacity %d > allocatable %d", capacity, inv.Allocatable)
	}
	if memory > inv.TotalMemoryMiB {
		return fmt.Sprintf("memory %d MiB > total %d MiB", memory, inv.TotalMemoryMiB)
	}
	for _, d := range inv.GPUs {
		if shares[d.Index] > d.Capacity || (exclusive[d.Index] && users[d.Index] > 1) {
			return fmt.Sprintf("gpu %d over-committed", d.Index)
		}
	}
	for _, c := range inv.Capabilities {
		if held[c.Name] > c.Count {
			return fmt.Sprintf("capability %s: %d > %d", c.Name, held[c.Name], c.Count)
		}
	}
	return ""
}

// checkInvariants asserts every §2.4 invariant of a store: stored usage
// equals usage recomputed from the reservations, usage fits the inventory
// (both via Fits and via the independent grantsViolation), and every pool's
// usage is the sum of its reservations and within its caps.
func checkInvariants(t rapid.TB, s *MemStore) {
	t.Helper()
	all := s.Reservations()
	for _, id := range s.Nodes() {
		inv, used, _ := s.Node(id)
		var want Usage
		var grants []Grant
		for _, r := range all {
			if r.Node == id {
				want = want.Add(r.Grant)
				grants = append(grants, r.Grant)
			}
		}
		if !reflect.DeepEqual(used, want) {
			t.Fatalf("node %s: stored usage %+v, recomputed %+v", id, used, want)
		}
		if err := Fits(inv, used); err != nil {
			t.Fatalf("node %s: %v", id, err)
		}
		if v := grantsViolation(inv, grants); v != "" {
			t.Fatalf("node %s: %s", id, v)
		}
	}
	pools := s.Pools()
	for _, r := range all {
		pools = append(pools, r.Pool)
	}
	slices.Sort(pools)
	pools = slices.Compact(pools)
	checkScopeInvariants(t, s, all, pools)
	for _, name := range pools {
		caps, used := s.Pool(name)
		var want PoolUsage
		for _, r := range all {
			if r.Pool == name {
				want = want.Add(r.Grant)
			}
		}
		if used != want {
			t.Fatalf("pool %s: stored usage %+v, recomputed %+v", name, used, want)
		}
		if (caps.MaxCapacity > 0 && used.Capacity > caps.MaxCapacity) || (caps.MaxCores > 0 && used.Cores > caps.MaxCores) ||
			(caps.MaxMemoryMiB > 0 && used.MemoryMiB > caps.MaxMemoryMiB) {
			t.Fatalf("pool %s: usage %+v over caps %+v", name, used, caps)
		}
	}
}

// checkScopeInvariants: every aggregate scope's usage is what the
// reservations of its pools hold, and within its caps.
func checkScopeInvariants(t rapid.TB, s *MemStore, all []Reservation, pools []string) {
	t.Helper()
	scopes := append([]string{ClusterScope}, s.Scopes()...)
	for _, p := range pools {
		scopes = append(scopes, s.PoolScopes(p)...)
	}
	slices.Sort(scopes)
	for _, sc := range slices.Compact(scopes) {
		caps, used := s.Pool(sc)
		var want PoolUsage
		for _, r := range all {
			if slices.Contains(s.PoolScopes(r.Pool), sc) {
				want = want.Add(r.Grant)
			}
		}
		if used != want {
			t.Fatalf("scope %s: stored usage %+v, recomputed %+v", sc, used, want)
		}
		if (caps.MaxCapacity > 0 && used.Capacity > caps.MaxCapacity) || (caps.MaxCores > 0 && used.Cores > caps.MaxCores) {
			t.Fatalf("scope %s: usage %+v over caps %+v", sc, used, caps)
		}
	}
}
