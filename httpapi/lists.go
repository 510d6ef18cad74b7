package httpapi

import (
	"github.com/labstack/echo/v4"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/fsm"
)

// The lists of the API, declared (list.go serves them).

var bundleListing = listing[fsm.Bundle]{
	name: "bundles", variable: "bundle", tables: []string{tableBundles},
	scan: (*fsm.State).BundlesAfter,
	id:   func(b *fsm.Bundle) string { return b.Spec.ID },
	narrow: func(c echo.Context) (func(*fsm.Bundle) bool, error) {
		pool := c.QueryParam("pool")
		state, err := enumParam(c, "state", fsm.BundleStates...)
		return func(b *fsm.Bundle) bool {
			return (pool == "" || b.Spec.Pool == pool) && (state == "" || b.State == state)
		}, err
	},
	// A page renders each bundle into one value and encodes it before the
	// next (list.go): a pointer to it is an entry, not a copy per bundle,
	// and a view of the state (the page reads one version of it), not a
	// copy of its tags and command lines.
	render: func(*Server, *fsm.State) renderer[fsm.Bundle] {
		var whole api.Bundle
		var summary api.BundleSummary
		return renderer[fsm.Bundle]{
			full: func(b *fsm.Bundle) any { bundleViewInto(&whole, b); return &whole },
			summary: func(b *fsm.Bundle, _ any) any {
				bundleSummaryInto(&summary, b)
				return &summary
			},
		}
	},
}

var nodeListing = listing[fsm.Node]{
	name: "nodes", variable: "node", tables: nodeTables,
	scan: (*fsm.State).NodesAfter,
	id:   func(n *fsm.Node) string { return n.ID },
	narrow: func(c echo.Context) (func(*fsm.Node) bool, error) {
		pool := c.QueryParam("pool")
		status, err := enumParam(c, "status", nodeStatuses...)
		return func(n *fsm.Node) bool {
			return (pool == "" || n.Pool == pool) && (status == "" || n.Status == status)
		}, err
	},
	render: func(s *Server, st *fsm.State) renderer[fsm.Node] {
		v := s.nodeView(st)
		return renderer[fsm.Node]{
			full: func(n *fsm.Node) any { return v.node(n) },
			summary: func(n *fsm.Node, full any) any {
				whole, ok := full.(api.Node)
				if !ok {
					whole = v.node(n)
				}
				return nodeSummary(&whole)
			},
		}
	},
}

var poolListing = listing[fsm.Pool]{
	name: "pools", variable: "pool", tables: []string{tablePools},
	scan: (*fsm.State).PoolsAfter,
	id:   func(p *fsm.Pool) string { return p.Name },
	render: func(*Server, *fsm.State) renderer[fsm.Pool] {
		return wholeObjects(func(p *fsm.Pool) any { return poolToAPI(p) })
	},
}

var serviceListing = listing[fsm.NodeService]{
	name: "services", variable: "service", tables: []string{tableServices},
	scan: (*fsm.State).ServicesAfter,
	id:   func(svc *fsm.NodeService) string { return svc.ID },
	render: func(*Server, *fsm.State) renderer[fsm.NodeService] {
		return wholeObjects(func(svc *fsm.NodeService) any { return serviceToAPI(svc) })
	},
}

// Templates list as their latest version; GET by name adds the versions.
var templateListing = listing[fsm.Template]{
	name: "templates", variable: "template", tables: []string{tableTemplates},
	scan: (*fsm.State).TemplatesAfter,
	id:   func(t *fsm.Template) string { return t.Name },
	render: func(*Server, *fsm.State) renderer[fsm.Template] {
		return wholeObjects(func(t *fsm.Template) any { return templateToAPI(t, false) })
	},
}

var aclTokenListing = listing[fsm.ACLToken]{
	name: "acl-tokens", variable: "token", tables: aclTables,
	scan: (*fsm.State).ACLTokensAfter,
	id:   func(t *fsm.ACLToken) string { return t.AccessorID },
	render: func(*Server, *fsm.State) renderer[fsm.ACLToken] {
		return wholeObjects(func(t *fsm.ACLToken) any { return aclTokenToAPI(t) })
	},
}
