package httpapi

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
)

// decodeSpec decodes and converts a submitted spec, then normalizes and
// validates it against the local state. pathID, when set, names the
// bundle; otherwise a missing id is generated. Conversion findings join
// static validation's so the client sees every problem at once.
func (s *Server) decodeSpec(c echo.Context, pathID string) (fsm.BundleSpec, fsm.Findings, error) {
	var in api.BundleSpec
	if err := decodeBody(c, &in); err != nil {
		return fsm.BundleSpec{}, fsm.Findings{}, err
	}
	switch {
	case pathID != "":
		if err := checkBodyID("bundle id", in.ID, pathID); err != nil {
			return fsm.BundleSpec{}, fsm.Findings{}, err
		}
		in.ID = pathID
	case in.ID == "":
		in.ID = api.NewID()
	}
	spec, problems := specFromAPI(in)
	stripped := fsm.StripReservedTags(&spec) // reserved tags are the server's: dropped, with a warning
	fsm.Normalize(&spec)
	f := fsm.Validate(&spec, s.b.State(), s.exprs)
	f.Errors = append(problems, f.Errors...)
	f.Warnings = append(stripped, f.Warnings...)
	return spec, f, nil
}

// checkedSpec is decodeSpec that rejects a spec with errors (422), before
// anything reaches Raft.
func (s *Server) checkedSpec(c echo.Context, pathID string) (fsm.BundleSpec, fsm.Findings, error) {
	spec, f, err := s.decodeSpec(c, pathID)
	if err == nil && !f.Valid() {
		err = validationFailed(f)
	}
	return spec, f, err
}

// createBundle is idempotent by id: 201 for a new bundle, 200 for an
// identical retry, 409 conflict for a different spec under the same id or
// any spec while that bundle is being deleted.
func (s *Server) createBundle(c echo.Context) error {
	spec, f, err := s.checkedSpec(c, "")
	if err != nil {
		return err
	}
	res, err := s.apply(c.Request().Context(), fsm.CreateBundleType, fsm.CreateBundleRequest{Spec: spec, Now: s.now()})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	return s.answerBundle(c, res, status, f.Warnings)
}

func (s *Server) answerBundle(c echo.Context, res *fsm.Result, status int, warnings []fsm.Finding) error {
	b, ok := res.Value.(*fsm.Bundle)
	if !ok || b == nil {
		return fmt.Errorf("apply at index %d returned %T, not a bundle", res.Index, res.Value)
	}
	setIndex(c, res.Index)
	return c.JSON(status, api.CreateResponse{Bundle: bundleToAPI(b), Warnings: findings(warnings)})
}

// validateBundle reports findings without changing anything.
func (s *Server) validateBundle(c echo.Context) error {
	_, f, err := s.decodeSpec(c, "")
	if err != nil {
		return err
	}
	setIndex(c, s.b.State().Index(tablePools, tableNodes, tableServices, tableTemplates))
	return c.JSON(http.StatusOK, api.ValidateResponse{
		Valid: f.Valid(), Errors: findings(f.Errors), Warnings: findings(f.Warnings),
	})
}

// planBundle runs placement as a dry run through the backend's scheduler.
func (s *Server) planBundle(c echo.Context) error {
	spec, _, err := s.checkedSpec(c, "")
	if err != nil {
		return err
	}
	s.b.State().ResolveRefs(&spec, nil) // shown pinned, as a create would store it
	plan, err := s.b.Plan(c.Request().Context(), spec)
	if err != nil {
		return err
	}
	b, explain := plan.Bundle, plan.Explain
	if b == nil {
		b = unplacedBundle(spec)
	}
	if explain == nil {
		explain = b.Explain
	}
	setIndex(c, s.b.State().Index())
	return c.JSON(http.StatusOK, api.PlanResponse{Bundle: bundleToAPI(b), Explain: explainToAPI(explain), Evictions: plan.Evictions})
}

func (s *Server) getBundle(c echo.Context) error {
	id := param(c, "id")
	return s.blockingRead(c, func(st *fsm.State) (any, error) {
		b := st.Bundle(id)
		if b == nil {
			return nil, notFound("bundle %q not found", id)
		}
		return bundleToAPI(b), nil
	}, tableBundles)
}

// replaceBundle replaces a spec; ?cas=<modifyIndex> makes it conditional.
func (s *Server) replaceBundle(c echo.Context) error {
	cas, present, err := uintParam(c, "cas")
	if err != nil {
		return err
	}
	if present && cas == 0 {
		return badRequest("cas must be a bundle's modifyIndex (> 0)")
	}
	spec, f, err := s.checkedSpec(c, param(c, "id"))
	if err != nil {
		return err
	}
	req := fsm.ReplaceBundleRequest{
		Spec: spec, CAS: cas, Now: s.now(), Rollout: true, RelaunchUnavailable: true,
		SettleRollout: s.b.ServersApply(fsm.LevelRolloutSettle),
	}
	res, err := s.apply(c.Request().Context(), fsm.ReplaceBundleType, req)
	if err != nil {
		return err
	}
	return s.answerBundle(c, res, http.StatusOK, f.Warnings)
}

// deleteBundle starts the stop-then-delete saga: 202, with the bundle now
// in state deleting.
func (s *Server) deleteBundle(c echo.Context) error {
	id := param(c, "id")
	res, err := s.apply(c.Request().Context(), fsm.DeleteBundleType, fsm.DeleteBundleRequest{ID: id, Now: s.now()})
	if err != nil {
		return err
	}
	setIndex(c, res.Index)
	if b := s.b.State().Bundle(id); b != nil {
		return c.JSON(http.StatusAccepted, bundleToAPI(b))
	}
	return c.JSON(http.StatusAccepted, api.Bundle{BundleSpec: api.BundleSpec{ID: id}, State: fsm.StateDeleting})
}
