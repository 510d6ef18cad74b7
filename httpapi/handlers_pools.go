package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
)

func (s *Server) getPool(c echo.Context) error {
	name := param(c, "name")
	return s.blockingRead(c, func(st *fsm.State) (any, error) {
		p := st.Pool(name)
		if p == nil {
			return nil, notFound("pool %q not found", name)
		}
		return poolToAPI(p), nil
	}, tablePools)
}

// putPool creates or replaces a pool. It is normalized and validated here
// first, so bad input never reaches Raft.
func (s *Server) putPool(c echo.Context) error {
	name := param(c, "name")
	var in api.Pool
	if err := decodeBody(c, &in); err != nil {
		return err
	}
	if err := checkBodyID("pool name", in.Name, name); err != nil {
		return err
	}
	p, err := poolFromAPI(name, in)
	if err != nil {
		return err
	}
	fsm.NormalizePool(&p)
	if err := fsm.ValidatePool(&p); err != nil {
		return err
	}
	if err := fsm.AdmitProvisioner(&p); err != nil {
		return err
	}
	res, err := s.apply(c.Request().Context(), fsm.UpsertPoolType, fsm.UpsertPoolRequest{Pool: p})
	if err != nil {
		return err
	}
	setIndex(c, res.Index)
	if stored := s.b.State().Pool(name); stored != nil {
		return c.JSON(http.StatusOK, poolToAPI(stored))
	}
	return c.JSON(http.StatusOK, poolToAPI(&p)) // replaced again since: answer what we wrote
}

func (s *Server) deletePool(c echo.Context) error {
	res, err := s.apply(c.Request().Context(), fsm.DeletePoolType, fsm.DeletePoolRequest{Name: param(c, "name")})
	if err != nil {
		return err
	}
	setIndex(c, res.Index)
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) getService(c echo.Context) error {
	id := param(c, "id")
	return s.blockingRead(c, func(st *fsm.State) (any, error) {
		svc := st.Service(id)
		if svc == nil {
			return nil, notFound("node service %q not found", id)
		}
		return serviceToAPI(svc), nil
	}, tableServices)
}

func (s *Server) putService(c echo.Context) error {
	id := param(c, "id")
	var in api.NodeService
	if err := decodeBody(c, &in); err != nil {
		return err
	}
	if err := checkBodyID("service id", in.ID, id); err != nil {
		return err
	}
	svc, err := serviceFromAPI(id, in)
	if err != nil {
		return err
	}
	fsm.NormalizeService(&svc)
	if err := fsm.AdmitService(&svc); err != nil {
		return err
	}
	if err := fsm.CheckServiceConstraints(&svc, s.exprs); err != nil {
		return err
	}
	// Until every server applies Update, the apply only rewrites the
	// record, as the release before it did.
	req := fsm.UpsertServiceRequest{Service: svc, Update: s.b.ServersApply(fsm.LevelRolloutSettle)}
	res, err := s.apply(c.Request().Context(), fsm.UpsertServiceType, req)
	if err != nil {
		return err
	}
	setIndex(c, res.Index)
	if stored := s.b.State().Service(id); stored != nil {
		return c.JSON(http.StatusOK, serviceToAPI(stored))
	}
	return c.JSON(http.StatusOK, serviceToAPI(&svc))
}

func (s *Server) deleteService(c echo.Context) error {
	res, err := s.apply(c.Request().Context(), fsm.DeleteServiceType, fsm.DeleteServiceRequest{ID: param(c, "id")})
	if err != nil {
		return err
	}
	setIndex(c, res.Index)
	return c.NoContent(http.StatusNoContent)
}
