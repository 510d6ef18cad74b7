package httpapi

import (
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

const (
	snapshotPath = "/v1/operator/snapshot"
	keyringPath  = "/v1/operator/keyring"
)

// Shorthands for the ACL rules of the route table.
var (
	public    = aclRule{need: accessPublic}
	anyToken  = aclRule{need: accessAnyToken}
	reader    = aclRule{need: accessRead}
	writer    = aclRule{need: accessWrite}
	manager   = aclRule{need: accessManagement}
	ownReader = aclRule{need: accessRead, ownNode: true}
	ownWriter = aclRule{need: accessWrite, ownNode: true}
	// keyringReader: every worker agent follows the gossip keyring.
	keyringReader = aclRule{need: accessRead, anyWorker: true}
	// archiveReader: workers fetch the template archives they run.
	archiveReader = aclRule{need: accessRead, anyWorker: true}
)

// handle registers a route with its ACL rule. authorize comes last, after
// the consistency middleware, so a forwarded request is judged where it is
// served (see authorize).
func (s *Server) handle(method, path string, h echo.HandlerFunc, rule aclRule, mw ...echo.MiddlewareFunc) {
	s.aclRules[method+" "+path] = rule
	s.echo.Add(method, path, h, append(mw, s.authorize)...)
}

// routes registers every endpoint of DESIGN §7 with who may call it. Each
// route's class decides its consistency: local answers this server's own
// view, read is linearizable unless ?stale, write runs on the leader.
func (s *Server) routes(snapshotLimit echo.MiddlewareFunc) {
	read, write := s.readMW, s.writeMW
	const get, put, post, del = "GET", "PUT", "POST", "DELETE"

	// Local: this server's own view, never forwarded.
	s.handle(get, "/v1/status/leader", s.getLeader, reader)
	s.handle(get, "/v1/status/peers", s.getPeers, reader)
	s.handle(get, "/v1/health", s.getHealth, public)
	s.handle(get, "/v1/members", s.expensive(s.getMembers), reader)
	s.handle(get, "/v1/operator/digest", s.expensive(s.getDigest), reader)
	if s.metricsHandler != nil {
		s.handle(get, "/metrics", s.getMetrics, reader)
	}

	s.handle(get, "/v1/pools", serveList(s, poolListing), reader, read)
	s.handle(get, "/v1/pools/:name", s.getPool, reader, read)
	s.handle(put, "/v1/pools/:name", s.putPool, writer, write)
	s.handle(del, "/v1/pools/:name", s.deletePool, writer, write)
	s.handle(get, "/v1/pools/:name/status", s.getPoolStatus, reader, read)
	// Cluster-wide and cap group caps: written like pools.
	s.handle(get, "/v1/caps", s.getCaps, reader, read)
	s.handle(put, "/v1/caps", s.putCaps, writer, write)

	// A worker token reaches its own node's registration, assignments and
	// status reports, and nothing else.
	s.handle(get, "/v1/nodes", serveList(s, nodeListing), reader, read)
	s.handle(get, "/v1/nodes/:id", s.getNode, ownReader, read)
	s.handle(put, "/v1/nodes/:id", s.registerNode, ownWriter, write)
	s.handle(del, "/v1/nodes/:id", s.deregisterNode, writer, write)
	s.handle(post, "/v1/nodes/:id/cordon", s.cordonNode, writer, write)
	s.handle(post, "/v1/nodes/:id/uncordon", s.uncordonNode, writer, write)
	s.handle(post, "/v1/nodes/:id/drain", s.drainNode, writer, write)
	s.handle(get, "/v1/nodes/:id/assignments", s.nodeAssignments, ownReader, read)
	s.handle(put, "/v1/nodes/:id/assignments/:aid/status", s.reportStatus, ownWriter, write)

	s.handle(post, "/v1/bundles", s.createBundle, writer, write)
	s.handle(post, "/v1/bundles/validate", s.expensive(s.validateBundle), reader, read)
	s.handle(post, "/v1/bundles/plan", s.expensive(s.planBundle), reader, read)
	s.handle(get, "/v1/bundles", serveList(s, bundleListing), reader, read)
	s.handle(get, "/v1/bundles/:id", s.getBundle, reader, read)
	s.handle(put, "/v1/bundles/:id", s.replaceBundle, writer, write)
	s.handle(del, "/v1/bundles/:id", s.deleteBundle, writer, write)

	s.handle(get, "/v1/services", serveList(s, serviceListing), reader, read)
	s.handle(get, "/v1/services/:id", s.getService, reader, read)
	s.handle(put, "/v1/services/:id", s.putService, writer, write)
	s.handle(del, "/v1/services/:id", s.deleteService, writer, write)

	s.handle(get, "/v1/events", s.streamEvents, reader, read)
	// Proxied to the assignment's worker from this server's state; a
	// follower that does not know the assignment forwards (a read).
	s.handle(get, "/v1/assignments/:id/logs", s.getAssignmentLogs, reader)
	s.templateRoutes()
	s.operatorRoutes(snapshotLimit)
}

// templateRoutes are the archives the cluster keeps (DESIGN §2.3a). A push
// has its own body limit, an archive's, in place of the API's default.
func (s *Server) templateRoutes() {
	read, write := s.readMW, s.writeMW
	const get, put, del = "GET", "PUT", "DELETE"
	s.handle(get, "/v1/templates", serveList(s, templateListing), reader, read)
	s.handle(get, templatePath, s.getTemplate, reader, read)
	s.handle(put, templatePath, s.putTemplate, writer, middleware.BodyLimit(templateBodyLimit), write)
	s.handle(del, templatePath, s.deleteTemplate, writer, write)
	s.handle(get, templatePath+"/archive", s.getTemplateArchive, archiveReader, read)
}

// operatorRoutes are the cluster operations: snapshots, Raft membership,
// ACL tokens and the gossip keyring.
func (s *Server) operatorRoutes(snapshotLimit echo.MiddlewareFunc) {
	read, write := s.readMW, s.writeMW
	const get, put, post, del = "GET", "PUT", "POST", "DELETE"
	// A snapshot holds every token's hash and the whole state: management.
	s.handle(get, snapshotPath, s.saveSnapshot, manager, read)
	s.handle(put, snapshotPath, s.restoreSnapshot, manager, snapshotLimit, s.streamWriteMW)
	s.handle(get, "/v1/operator/raft", s.getRaft, reader, s.diagnosticMW)
	s.handle(post, "/v1/operator/raft/transfer-leadership", s.transferLeadership, manager, write)
	s.handle(del, "/v1/operator/raft/peers/:id", s.removePeer, manager, write)

	s.handle(get, "/v1/acl/tokens", serveList(s, aclTokenListing), manager, read)
	s.handle(post, "/v1/acl/tokens", s.createACLToken, manager, write)
	s.handle(get, "/v1/acl/tokens/:accessor", s.getACLToken, manager, read)
	s.handle(del, "/v1/acl/tokens/:accessor", s.deleteACLToken, manager, write)
	s.handle(get, "/v1/acl/token/self", s.getACLTokenSelf, anyToken, read)

	// Gossip keyring: a worker token may read it (its agent follows the
	// replicated keyring); ?keys=true further needs worker or management
	// (getKeyring), changes need management.
	s.handle(get, keyringPath, s.getKeyring, keyringReader, read)
	s.handle(post, keyringPath, s.changeKeyring, manager, write)
}
