package httpapi

import "github.com/labstack/echo/v4"

const snapshotPath = "/v1/operator/snapshot"

// routes registers every endpoint of DESIGN §7 (except /metrics and /ui,
// which come later). Each route's class decides its consistency: local
// answers this server's own view, read is linearizable unless ?stale, write
// runs on the leader.
func (s *Server) routes(snapshotLimit echo.MiddlewareFunc) {
	e := s.echo
	read, write := s.readMW, s.writeMW

	// Local: this server's own view, never forwarded.
	e.GET("/v1/status/leader", s.getLeader)
	e.GET("/v1/status/peers", s.getPeers)
	e.GET("/v1/health", s.getHealth)
	e.GET("/v1/members", s.getMembers)
	e.GET("/v1/operator/digest", s.getDigest)

	e.GET("/v1/pools", s.listPools, read)
	e.GET("/v1/pools/:name", s.getPool, read)
	e.PUT("/v1/pools/:name", s.putPool, write)
	e.DELETE("/v1/pools/:name", s.deletePool, write)
	e.GET("/v1/pools/:name/status", s.getPoolStatus, read)

	e.GET("/v1/nodes", s.listNodes, read)
	e.GET("/v1/nodes/:id", s.getNode, read)
	e.PUT("/v1/nodes/:id", s.registerNode, write)
	e.DELETE("/v1/nodes/:id", s.deregisterNode, write)
	e.POST("/v1/nodes/:id/cordon", s.cordonNode, write)
	e.POST("/v1/nodes/:id/uncordon", s.uncordonNode, write)
	e.POST("/v1/nodes/:id/drain", s.drainNode, write)
	e.GET("/v1/nodes/:id/assignments", s.nodeAssignments, read)
	e.PUT("/v1/nodes/:id/assignments/:aid/status", s.reportStatus, write)

	e.POST("/v1/bundles", s.createBundle, write)
	e.POST("/v1/bundles/validate", s.validateBundle, read)
	e.POST("/v1/bundles/plan", s.planBundle, read)
	e.GET("/v1/bundles", s.listBundles, read)
	e.GET("/v1/bundles/:id", s.getBundle, read)
	e.PUT("/v1/bundles/:id", s.replaceBundle, write)
	e.DELETE("/v1/bundles/:id", s.deleteBundle, write)

	e.GET("/v1/services", s.listServices, read)
	e.GET("/v1/services/:id", s.getService, read)
	e.PUT("/v1/services/:id", s.putService, write)
	e.DELETE("/v1/services/:id", s.deleteService, write)

	e.GET("/v1/events", s.streamEvents, read)

	e.GET(snapshotPath, s.saveSnapshot, read)
	e.PUT(snapshotPath, s.restoreSnapshot, snapshotLimit, s.streamWriteMW)
	e.GET("/v1/operator/raft", s.getRaft, read)
	e.POST("/v1/operator/raft/transfer-leadership", s.transferLeadership, write)
	e.DELETE("/v1/operator/raft/peers/:id", s.removePeer, write)
}
