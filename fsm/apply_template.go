package fsm

import (
	"fmt"
	"slices"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/artifact"
)

// PutTemplateRequest stores an archive under a name. The API checked the
// archive (artifact.Inspect) and says what it found; Apply checks only what
// it can cheaply and deterministically: the digest of the bytes carried.
type PutTemplateRequest struct {
	Name    string
	Digest  string
	Runtime string
	Files   int
	Archive []byte
	// Now is the leader's clock, for the push's event time; commands of
	// older leaders carry none and keep the time of the command before.
	Now int64 `json:",omitempty"`
}

// DeleteTemplateRequest removes a name and every version kept under it.
type DeleteTemplateRequest struct {
	Name string
	Now  int64 `json:",omitempty"` // as PutTemplateRequest's
}

// TemplatePut is a push's result: the template and the version the push
// made latest; New is false when the bytes already were the latest.
type TemplatePut struct {
	Template *Template
	Version  TemplateVersion
	New      bool
}

func (f *FSM) applyPutTemplate(t *tx, req *PutTemplateRequest) (any, error) {
	t.advance(req.Now)
	if err := checkPut(req); err != nil {
		return nil, err
	}
	old := t.Template(req.Name)
	if old != nil && old.Latest().Digest == req.Digest {
		return &TemplatePut{Template: old, Version: old.Latest()}, nil
	}
	next := &Template{Name: req.Name, CreateIndex: t.index}
	if old != nil {
		next.CreateIndex = old.CreateIndex
		// Bytes pushed again become the latest once more.
		next.Versions = slices.DeleteFunc(slices.Clone(old.Versions), func(v TemplateVersion) bool { return v.Digest == req.Digest })
	}
	v := TemplateVersion{Digest: req.Digest, Runtime: req.Runtime, Files: req.Files, Size: int64(len(req.Archive)), CreateIndex: t.index}
	next.Versions = append(next.Versions, v)
	dropped, err := t.pruneVersions(next)
	if err != nil {
		return nil, err
	}
	if t.Blob(req.Digest) == nil {
		if used := t.blobBytes(); used+int64(len(req.Archive)) > MaxTemplateBytes {
			return nil, fmt.Errorf("%w: the cluster keeps %d bytes of templates; %d more would pass the %d allowed: delete unused templates first",
				ErrConflict, used, len(req.Archive), MaxTemplateBytes)
		}
		t.insert(tableBlobs, &TemplateBlob{Digest: req.Digest, Runtime: req.Runtime, Files: req.Files,
			Size: int64(len(req.Archive)), Data: req.Archive})
	}
	next.ModifyIndex = t.index
	t.insert(tableTemplates, next)
	t.dropBlobs(dropped)
	t.event(api.EventTemplatePushed, "", "", "template %s: %s (%s) is the latest", req.Name, req.Digest, req.Runtime)
	return &TemplatePut{Template: next, Version: v, New: true}, nil
}

// checkPut refuses a push whose fields disagree with its bytes.
func checkPut(req *PutTemplateRequest) error {
	switch {
	case !validName(req.Name):
		return invalidf("template name %q must match %s", req.Name, namePattern)
	case !oneOf(req.Runtime, api.RuntimeCompose, api.RuntimeWasm):
		return invalidf("template runtime %q must be compose or wasm", req.Runtime)
	case len(req.Archive) == 0 || len(req.Archive) > artifact.MaxArchive:
		return invalidf("template archive of %d bytes must be 1..%d", len(req.Archive), artifact.MaxArchive)
	case req.Files < 1 || req.Files > artifact.MaxEntries:
		return invalidf("template files %d must be within 1..%d", req.Files, artifact.MaxEntries)
	case archiveDigest(req.Archive) != req.Digest:
		return invalidf("template digest %s is not the archive's (%s)", req.Digest, archiveDigest(req.Archive))
	}
	return nil
}

// pruneVersions keeps at most MaxTemplateVersions, dropping the oldest that
// no bundle pins; it returns the dropped digests.
func (t *tx) pruneVersions(tpl *Template) ([]string, error) {
	var dropped []string
	for len(tpl.Versions) > MaxTemplateVersions {
		i := slices.IndexFunc(tpl.Versions[:len(tpl.Versions)-1], func(v TemplateVersion) bool {
			return t.templateUser(tpl.Name, v.Digest) == ""
		})
		if i < 0 {
			return nil, fmt.Errorf("%w: template %s keeps %d versions and bundles use every one of them",
				ErrInUse, tpl.Name, MaxTemplateVersions)
		}
		dropped = append(dropped, tpl.Versions[i].Digest)
		tpl.Versions = slices.Delete(tpl.Versions, i, i+1)
	}
	return dropped, nil
}

func (f *FSM) applyDeleteTemplate(t *tx, req *DeleteTemplateRequest) (any, error) {
	t.advance(req.Now)
	tpl := t.Template(req.Name)
	if tpl == nil {
		return nil, fmt.Errorf("template %s: %w", req.Name, ErrNotFound)
	}
	if b := t.templateUser(tpl.Name, ""); b != "" {
		return nil, fmt.Errorf("%w: bundle %s uses template %s", ErrInUse, b, tpl.Name)
	}
	t.delete(tableTemplates, tpl)
	digests := make([]string, len(tpl.Versions))
	for i, v := range tpl.Versions {
		digests[i] = v.Digest
	}
	t.dropBlobs(digests)
	t.event(api.EventTemplateDeleted, "", "", "template %s deleted", tpl.Name)
	return nil, nil
}

// dropBlobs deletes the blobs of digests that no template keeps any more.
func (t *tx) dropBlobs(digests []string) {
	if len(digests) == 0 {
		return
	}
	kept := map[string]bool{}
	for _, tpl := range t.Templates() {
		for _, v := range tpl.Versions {
			kept[v.Digest] = true
		}
	}
	for _, d := range digests {
		if b := t.Blob(d); b != nil && !kept[d] {
			t.delete(tableBlobs, b)
		}
	}
}

// blobBytes is the size of every blob together.
func (t *tx) blobBytes() int64 {
	var n int64
	for _, b := range all[TemplateBlob](t.txn, tableBlobs, "id") {
		n += b.Size
	}
	return n
}
