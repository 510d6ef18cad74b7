package httpapi

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/amserver/amserver/artifact"
	"github.com/amserver/amserver/fsm"
)

const (
	tableTemplates = "templates"
	templatePath   = "/v1/templates/:name"
	// templateBodyLimit is the push route's own body limit: an archive of
	// artifact.MaxArchive bytes, whatever the API's default limit.
	templateBodyLimit = "4MiB"
)

func isTemplatePush(c echo.Context) bool {
	return c.Request().Method == http.MethodPut && c.Path() == templatePath
}

func (s *Server) getTemplate(c echo.Context) error {
	name := param(c, "name")
	return s.blockingRead(c, func(st *fsm.State) (any, error) {
		t := st.Template(name)
		if t == nil {
			return nil, notFound("template %q not found", name)
		}
		return templateToAPI(t, true), nil
	}, tableTemplates)
}

// putTemplate stores a tar or tar.gz archive under a name. The archive is
// checked here (artifact.Inspect: paths, links, special files, sizes, the
// runtime its content implies) so a refused one never reaches Raft; bytes
// that already are the name's latest version answer at once, without a
// Raft entry.
func (s *Server) putTemplate(c echo.Context) error {
	name := param(c, "name")
	if !fsm.ValidTemplateName(name) {
		return &httpError{status: http.StatusBadRequest, code: artifact.CodeInvalidTemplate,
			message: "template name " + quote(name) + " must match [a-z0-9][a-z0-9._-]{0,62}"}
	}
	body, err := bodyBytes(c)
	if err != nil {
		return err
	}
	info, err := artifact.Inspect(body)
	if err != nil {
		return archiveError(err)
	}
	if t := s.b.State().Template(name); t != nil && t.Latest().Digest == info.Digest {
		setIndex(c, t.ModifyIndex)
		return c.JSON(http.StatusOK, versionToAPI(name, t.Latest()))
	}
	req := fsm.PutTemplateRequest{Name: name, Digest: info.Digest, Runtime: info.Runtime, Files: info.Files, Archive: body, Now: s.now()}
	res, err := s.apply(c.Request().Context(), fsm.PutTemplateType, req)
	if err != nil {
		return err
	}
	put, ok := res.Value.(*fsm.TemplatePut)
	if !ok || put == nil {
		return errors.New("template push returned no template")
	}
	setIndex(c, res.Index)
	status := http.StatusOK
	if put.New {
		status = http.StatusCreated
	}
	return c.JSON(status, versionToAPI(name, put.Version))
}

// archiveError answers a refused archive with its code: 413 when it is too
// large, 400 otherwise.
func archiveError(err error) error {
	var ae *artifact.Error
	if !errors.As(err, &ae) {
		return badRequest("template archive: %v", err)
	}
	status := http.StatusBadRequest
	if ae.Code == artifact.CodeTooLarge {
		status = http.StatusRequestEntityTooLarge
	}
	return &httpError{status: status, code: ae.Code, message: ae.Msg}
}

// getTemplateArchive answers a version's bytes: ?digest= names one, the
// latest otherwise. Workers fetch what their assignments' refs pin.
func (s *Server) getTemplateArchive(c echo.Context) error {
	name, digest := param(c, "name"), c.QueryParam("digest")
	if digest != "" && !fsm.ValidDigest(digest) {
		return badRequest("query parameter digest=%q must be sha256:<64 lowercase hex digits>", digest)
	}
	st := s.b.State()
	t := st.Template(name)
	if t == nil {
		return notFound("template %q not found", name)
	}
	v, ok := t.Latest(), true
	if digest != "" {
		v, ok = t.Version(digest)
	}
	blob := st.Blob(v.Digest)
	if !ok || blob == nil {
		return notFound("template %q keeps no version %s", name, digest)
	}
	setIndex(c, st.Index(tableTemplates))
	c.Response().Header().Set("ETag", quote(v.Digest))
	return c.Blob(http.StatusOK, echo.MIMEOctetStream, blob.Data)
}

// deleteTemplate removes a name and its versions; 409 inUse while a bundle
// uses one of them.
func (s *Server) deleteTemplate(c echo.Context) error {
	res, err := s.apply(c.Request().Context(), fsm.DeleteTemplateType, fsm.DeleteTemplateRequest{Name: param(c, "name"), Now: s.now()})
	if err != nil {
		return err
	}
	setIndex(c, res.Index)
	return c.NoContent(http.StatusNoContent)
}
