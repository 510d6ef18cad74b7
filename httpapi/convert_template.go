package httpapi

import (
	"slices"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
)

// templateToAPI is a template as its latest version says, with every
// version kept (oldest first) when withVersions is set.
func templateToAPI(t *fsm.Template, withVersions bool) api.Template {
	out := versionToAPI(t.Name, t.Latest())
	if withVersions {
		out.Versions = slices.Clone(t.Versions)
	}
	return out
}

// versionToAPI is one version of a template, as a push answers it.
func versionToAPI(name string, v fsm.TemplateVersion) api.Template {
	return api.Template{Name: name, Digest: v.Digest, Runtime: v.Runtime, Files: v.Files, Size: v.Size, CreateIndex: v.CreateIndex}
}
