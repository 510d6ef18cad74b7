package fsm

import (
	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/artifact"
)

// Templates are archives the cluster keeps (DESIGN §2.3a), stored
// content-addressed: a template row names its versions by digest, and a
// blob row holds each distinct archive's bytes once, however many names
// and versions share it.

// Limits on what the replicated state keeps of templates: every server
// holds every blob in memory and in every snapshot.
const (
	// MaxTemplateVersions is how many archives one name keeps; a push
	// beyond it drops the oldest version no bundle uses.
	MaxTemplateVersions = 16
	// MaxTemplateBytes bounds the bytes of every blob together.
	MaxTemplateBytes = 256 << 20
)

// TemplateVersion is one archive kept under a name.
type TemplateVersion = api.TemplateVersion

// Template is a name and the archives kept under it.
type Template struct {
	Name string `json:"name"`
	// Versions are oldest first; the last is the latest, which a bare ref
	// resolves to.
	Versions    []TemplateVersion `json:"versions"`
	CreateIndex uint64            `json:"createIndex"`
	ModifyIndex uint64            `json:"modifyIndex"`
}

// Latest is the version a bare name means.
func (t *Template) Latest() TemplateVersion { return t.Versions[len(t.Versions)-1] }

// Version returns the version with digest d.
func (t *Template) Version(d string) (TemplateVersion, bool) {
	for _, v := range t.Versions {
		if v.Digest == d {
			return v, true
		}
	}
	return TemplateVersion{}, false
}

// TemplateBlob is one archive's bytes, by digest, with what Inspect found.
type TemplateBlob struct {
	Digest  string `json:"digest"`
	Runtime string `json:"runtime"`
	Files   int    `json:"files"`
	Size    int64  `json:"size"`
	Data    []byte `json:"data"`
}

// Template returns a template or nil.
func (s *State) Template(name string) *Template {
	return first[Template](s.txn, tableTemplates, "id", name)
}

// Templates returns every template sorted by name.
func (s *State) Templates() []*Template { return all[Template](s.txn, tableTemplates, "id") }

// Blob returns the archive with digest d, or nil.
func (s *State) Blob(d string) *TemplateBlob {
	return first[TemplateBlob](s.txn, tableBlobs, "id", d)
}

// ResolveTemplate returns the template and version a ref names: a bare
// name means its latest version; a pinned ref must name a version kept
// under that name. ok is false when there is none.
func (s *State) ResolveTemplate(ref string) (*Template, TemplateVersion, bool) {
	name, digest, err := ParseTemplateRef(ref)
	if err != nil {
		return nil, TemplateVersion{}, false
	}
	t := s.Template(name)
	if t == nil || len(t.Versions) == 0 {
		return nil, TemplateVersion{}, false
	}
	if digest == "" {
		return t, t.Latest(), true
	}
	v, ok := t.Version(digest)
	return t, v, ok
}

// TemplateRuntime is the runtime of the template a ref names ("" when
// none): what a template launch implies for placement and assignments.
func (s *State) TemplateRuntime(ref string) string {
	if _, v, ok := s.ResolveTemplate(ref); ok {
		return v.Runtime
	}
	return ""
}

// ResolveRefs pins every template launch of spec to a digest, so a later
// push never changes what the bundle runs: a bare name becomes
// name@<latest digest>, or, when prev (the stored bundle a create retries)
// pins the same job to a version of that name still kept, that version,
// so an identical retry stays identical. Refs that do not resolve are left
// as they are (validation reports them).
func (s *State) ResolveRefs(spec *BundleSpec, prev *BundleSpec) {
	for i := range spec.Jobs {
		l := &spec.Jobs[i].Launch
		if l.Kind != api.LaunchProductTemplate {
			continue
		}
		name, digest, err := ParseTemplateRef(l.Ref)
		if err != nil || digest != "" {
			continue
		}
		if pinned := prevRef(prev, spec.Jobs[i].Name, name); pinned != "" {
			if _, _, ok := s.ResolveTemplate(pinned); ok {
				l.Ref = pinned
				continue
			}
		}
		if t := s.Template(name); t != nil && len(t.Versions) > 0 {
			l.Ref = name + "@" + t.Latest().Digest
		}
	}
}

// prevRef is the pinned ref a stored spec's job holds for template name.
func prevRef(prev *BundleSpec, job, name string) string {
	if prev == nil {
		return ""
	}
	j := prev.Job(job)
	if j == nil || j.Launch.Kind != api.LaunchProductTemplate {
		return ""
	}
	if n, d, err := ParseTemplateRef(j.Launch.Ref); err == nil && n == name && d != "" {
		return j.Launch.Ref
	}
	return ""
}

// templateUser returns a bundle (deleting ones included: their workers may
// still need the archive) whose template launch uses the named template,
// at digest when digest is set; "" when none does.
func (s *State) templateUser(name, digest string) string {
	for _, b := range s.Bundles("", "") {
		for i := range b.Spec.Jobs {
			l := &b.Spec.Jobs[i].Launch
			if l.Kind != api.LaunchProductTemplate {
				continue
			}
			if n, d, err := ParseTemplateRef(l.Ref); err == nil && n == name && (digest == "" || d == digest) {
				return b.ID()
			}
		}
	}
	return ""
}

// archiveDigest names bytes as the cluster does.
func archiveDigest(b []byte) string { return artifact.Digest(b) }

// ValidTemplateName reports whether name may name a template: the rules of
// bundle ids.
func ValidTemplateName(name string) bool { return validName(name) }
