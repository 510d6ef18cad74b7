package leader

import (
	"fmt"
	"strings"

	"github.com/amserver/amserver/fsm"
)

// warnShort logs, once per spawn and term, a provisioned node that
// registered with less than its instance type: the planner counted on the
// type, so its demand stays unplaceable and is provisioned again, node
// after node, and without this nothing says the provisioner is at fault.
func (e *elastic) warnShort(st *fsm.State, spawns []*fsm.Spawn) {
	seen := make(map[string]bool, len(e.warnedShort))
	for _, sp := range spawns {
		n := st.Node(sp.NodeID)
		if sp.State != fsm.SpawnRegistered || n == nil {
			continue
		}
		short := shortOf(n, &sp.InstanceType)
		if short == "" {
			continue
		}
		seen[sp.ID] = true
		if !e.warnedShort[sp.ID] {
			e.l.log.Warn(msgSpawnShort, "node", n.ID, "pool", sp.Pool, "instanceType", sp.InstanceType.Name,
				"request", sp.ID, "short", short)
		}
	}
	e.warnedShort = seen
}

const msgSpawnShort = "provisioned node registered with less than its instance type; check the provisioner's worker flags"

// shortOf lists what a node has less of than its instance type ("" when
// nothing).
func shortOf(n *fsm.Node, it *fsm.InstanceType) string {
	var out []string
	if n.TotalCapacity < it.TotalCapacity {
		out = append(out, fmt.Sprintf("capacity %s of %s", fsm.Units(n.TotalCapacity), fsm.Units(it.TotalCapacity)))
	}
	if n.TotalCores < it.TotalCores {
		out = append(out, fmt.Sprintf("cores %d of %d", n.TotalCores, it.TotalCores))
	}
	if it.TotalMemoryMiB > 0 && n.TotalMemoryMiB < it.TotalMemoryMiB {
		out = append(out, fmt.Sprintf("memoryMiB %d of %d", n.TotalMemoryMiB, it.TotalMemoryMiB))
	}
	if len(n.GPUs) < len(it.GPUs) {
		out = append(out, fmt.Sprintf("gpus %d of %d", len(n.GPUs), len(it.GPUs)))
	}
	return strings.Join(out, ", ")
}
