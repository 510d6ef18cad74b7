package httpapi

import (
	"maps"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/internal/convert"
	"github.com/amserver/amserver/ledger"
)

// tableCaps holds the cluster's and cap groups' caps and usage.
const tableCaps = "caps"

var (
	capsPair  = convert.MustPair[api.PoolCaps, ledger.PoolCaps]()
	usagePair = convert.MustPair[api.PoolUsage, ledger.PoolUsage]()
)

func (s *Server) getCaps(c echo.Context) error {
	return s.blockingRead(c, func(st *fsm.State) (any, error) {
		return capsToAPI(st), nil
	}, tableCaps, tablePools)
}

// putCaps replaces the cluster's caps and cap groups. They are validated
// here first, so bad input never reaches Raft; a cap below what is already
// held is the FSM's 409.
func (s *Server) putCaps(c echo.Context) error {
	var in api.ClusterCaps
	if err := decodeBody(c, &in); err != nil {
		return err
	}
	caps, err := capsFromAPI(in)
	if err != nil {
		return err
	}
	if err := fsm.ValidateClusterCaps(&caps); err != nil {
		return err
	}
	res, err := s.apply(c.Request().Context(), fsm.SetCapsType, fsm.SetCapsRequest{Caps: caps})
	if err != nil {
		return err
	}
	setIndex(c, res.Index)
	return c.JSON(http.StatusOK, capsToAPI(s.b.State()))
}

// capsFromAPI converts a PUT /v1/caps body; read-only fields are ignored.
func capsFromAPI(in api.ClusterCaps) (fsm.ClusterCaps, error) {
	var out fsm.ClusterCaps
	problems := capsPair.ToFSM(&out.Caps, &in.PoolCaps)
	for _, name := range slices.Sorted(maps.Keys(in.Groups)) {
		g := in.Groups[name]
		var caps ledger.PoolCaps
		for _, p := range capsPair.ToFSM(&caps, &g.PoolCaps) {
			// say which group: every group has the same fields
			p.Path = append([]convert.Step{{Name: "groups", Index: -1}, {Name: fsm.Clip(name), Index: -1}}, p.Path...)
			problems = append(problems, p)
		}
		if out.Groups == nil {
			out.Groups = map[string]ledger.PoolCaps{}
		}
		out.Groups[name] = caps
	}
	return out, invalid(problems)
}

// capsToAPI renders the caps with what each scope holds and which pools
// joined each group: every group with caps or pools is listed.
func capsToAPI(st *fsm.State) api.ClusterCaps {
	out := api.ClusterCaps{Usage: &api.PoolUsage{}}
	groups := map[string]*api.CapGroup{}
	group := func(name string) *api.CapGroup {
		if g := groups[name]; g != nil {
			return g
		}
		g := &api.CapGroup{Usage: &api.PoolUsage{}}
		groups[name] = g
		return g
	}
	for _, row := range st.CapScopes() {
		var caps api.PoolCaps
		capsPair.ToAPI(&caps, &row.Caps)
		var used api.PoolUsage
		usagePair.ToAPI(&used, &row.Usage)
		out.ModifyIndex = max(out.ModifyIndex, row.ModifyIndex)
		if name, ok := ledger.ScopeGroup(row.Name); ok {
			g := group(name)
			g.PoolCaps, *g.Usage = caps, used
			continue
		}
		out.PoolCaps, *out.Usage = caps, used
	}
	for _, p := range st.Pools() {
		if p.CapGroup != "" {
			g := group(p.CapGroup)
			g.Pools = append(g.Pools, p.Name)
		}
	}
	if len(groups) > 0 {
		out.Groups = make(map[string]api.CapGroup, len(groups))
		for name, g := range groups {
			out.Groups[name] = *g
		}
	}
	return out
}
