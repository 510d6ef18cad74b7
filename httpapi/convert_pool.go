package httpapi

import (
	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/internal/convert"
)

// Usage and indexes are read-only: ignored on PUT, so a pool or service
// read back can be edited and put again.
var (
	poolPair    = convert.MustPair[api.Pool, fsm.Pool](convert.ReadOnly("Usage", "CreateIndex", "ModifyIndex"))
	servicePair = convert.MustPair[api.NodeService, fsm.NodeService](convert.ReadOnly("CreateIndex", "ModifyIndex"))
)

// poolFromAPI converts a pool definition; name comes from the path.
func poolFromAPI(name string, in api.Pool) (fsm.Pool, error) {
	var p fsm.Pool
	problems := poolPair.ToFSM(&p, &in)
	p.Name = name
	return p, invalid(problems)
}

func poolToAPI(p *fsm.Pool) api.Pool {
	var out api.Pool
	poolPair.ToAPI(&out, p)
	return out
}

// serviceFromAPI converts a node service; id comes from the path.
func serviceFromAPI(id string, in api.NodeService) (fsm.NodeService, error) {
	var s fsm.NodeService
	problems := servicePair.ToFSM(&s, &in)
	s.ID = id
	return s, invalid(problems)
}

func serviceToAPI(s *fsm.NodeService) api.NodeService {
	var out api.NodeService
	servicePair.ToAPI(&out, s)
	return out
}
