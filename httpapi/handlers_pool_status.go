package httpapi

import (
	"github.com/labstack/echo/v4"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/internal/convert"
)

// tableSpawns is fsm's table of provisioned nodes (elastic pools).
const tableSpawns = "spawns"

// getPoolStatus answers a pool's nodes by state: ready, idle, spawning,
// draining, unavailable (DESIGN §2.2, elastic pools).
func (s *Server) getPoolStatus(c echo.Context) error {
	name := param(c, "name")
	return s.expensiveRead(c, func(st *fsm.State) (any, error) {
		ps := st.PoolStatus(name)
		if ps == nil {
			return nil, notFound("pool %q not found", name)
		}
		return poolStatusToAPI(ps), nil
	}, tablePools, tableNodes, tableBundles, tableAssignments, tableSpawns)
}

func poolStatusToAPI(ps *fsm.PoolStatus) api.PoolStatus {
	p := ps.Pool
	out := api.PoolStatus{
		Pool: p.Name, Kind: p.Kind, MinNodes: p.MinNodes, MaxNodes: p.MaxNodes, Warm: p.Warm,
		Counts: ps.Counts, Nodes: make([]api.PoolNodeStatus, len(ps.Nodes)), Provisioned: ps.Provisioned.Total(),
	}
	for i := range ps.Nodes {
		poolNodePair.ToAPI(&out.Nodes[i], &ps.Nodes[i])
	}
	return out
}

var poolNodePair = convert.MustPair[api.PoolNodeStatus, fsm.PoolNodeStatus]()
