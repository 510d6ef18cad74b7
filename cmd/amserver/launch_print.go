package main

import (
	"strings"

	"github.com/amserver/amserver/api"
)

// launchText is a launch in a table cell: a template's ref (its digest
// shortened), or a legacy job's driver, with the image for docker.
func launchText(l api.Launch) string {
	switch {
	case l.Kind == api.LaunchProductTemplate:
		name, digest, _ := strings.Cut(l.Ref, "@")
		if digest == "" {
			return "template " + clean(name)
		}
		return "template " + clean(name) + "@" + shortDigest(digest)
	case l.Job != nil:
		d := orDefault(l.Job.Driver, api.DriverNone)
		if d == api.DriverDocker {
			return d + " " + clean(l.Job.Image)
		}
		return d
	}
	return orDefault(l.Driver, api.DriverNone)
}

// launchCommand is a legacy launch's command, in either shape.
func launchCommand(l api.Launch) string {
	if l.Job != nil {
		return orDash(strings.Join(l.Job.Command, " "))
	}
	return orDash(strings.Join(l.Command, " "))
}

// runtimeText is a job's runtime.oneOf, "-" when its launch implies one.
func runtimeText(r *api.RuntimeRequirement) string {
	if r == nil {
		return "-"
	}
	return list(r.OneOf)
}
