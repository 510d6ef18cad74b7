package fsm

import (
	"fmt"
	"maps"
	"slices"

	"github.com/amserver/amserver/ledger"
)

// Row layouts of rowcodec.go, field by field in declaration order.

func encodeBundleRow(dst []byte, b *Bundle) []byte {
	e := &rowEnc{b: dst}
	encSpec(e, &b.Spec)
	e.str(b.State)
	e.uint(b.Epoch)
	rowList(e, b.Replicas, encReplica)
	rowList(e, b.Degradations, func(e *rowEnc, d *Degradation) {
		e.str(d.Code)
		e.str(d.Message)
		e.int(d.Since)
	})
	e.present(b.Explain != nil)
	if x := b.Explain; x != nil {
		encExplain(e, x)
	}
	e.int(b.SubmitTime)
	e.bool(b.Deleting)
	e.int(b.DeleteTime)
	e.uint(b.AttemptIndex)
	e.uint(b.CreateIndex)
	e.uint(b.ModifyIndex)
	return e.b
}

func decodeBundleRow(d *rowDec) (*Bundle, error) {
	b := &Bundle{}
	decSpec(d, &b.Spec)
	b.State = d.name()
	b.Epoch = d.uint()
	b.Replicas = rowListDec(d, decReplica)
	b.Degradations = rowListDec(d, func(d *rowDec, x *Degradation) {
		x.Code, x.Message, x.Since = d.name(), d.str(), d.int()
	})
	if d.present() {
		b.Explain = decExplain(d)
	}
	b.SubmitTime = d.int()
	b.Deleting = d.bool()
	b.DeleteTime = d.int()
	b.AttemptIndex = d.uint()
	b.CreateIndex = d.uint()
	b.ModifyIndex = d.uint()
	return b, d.done("bundle")
}

func encodeAssignmentRow(dst []byte, a *Assignment) []byte {
	e := &rowEnc{b: dst}
	e.str(a.ID)
	e.str(a.BundleID)
	e.int(int64(a.Replica))
	e.str(a.Job)
	e.str(a.NodeID)
	e.str(a.Role)
	e.uint(a.Epoch)
	e.str(a.Desired)
	e.str(a.Status)
	e.str(a.Message)
	encGrant(e, &a.Grant)
	encLaunch(e, &a.Launch)
	e.str(a.ServiceID)
	e.uint(a.CreateIndex)
	e.uint(a.ModifyIndex)
	return e.b
}

func decodeAssignmentRow(d *rowDec) (*Assignment, error) {
	a := &Assignment{}
	a.ID, a.BundleID = d.str(), d.str()
	a.Replica = int(d.int())
	a.Job, a.NodeID, a.Role = d.name(), d.name(), d.name()
	a.Epoch = d.uint()
	a.Desired, a.Status, a.Message = d.name(), d.name(), d.str()
	decGrant(d, &a.Grant)
	decLaunch(d, &a.Launch)
	a.ServiceID = d.name()
	a.CreateIndex = d.uint()
	a.ModifyIndex = d.uint()
	return a, d.done("assignment")
}

// done checks that the row was read whole and without error.
func (d *rowDec) done(what string) error {
	if d.err == nil && len(d.b) > 0 {
		d.err = fmt.Errorf("%d bytes after the row", len(d.b))
	}
	if d.err != nil {
		return fmt.Errorf("decode %s row: %w", what, d.err)
	}
	return nil
}

func encSpec(e *rowEnc, s *BundleSpec) {
	e.str(s.ID)
	e.str(s.Pool)
	e.str(s.Priority)
	rowList(e, s.Jobs, encJob)
	e.bool(s.Placement.SameNodeDefault)
	e.str(s.Placement.SameAz)
	e.present(s.Resilience != nil)
	if r := s.Resilience; r != nil {
		e.str(r.Pool)
		e.str(r.SameNode)
		e.str(r.SameAz)
		e.str(r.SameCloud)
	}
	e.int(s.StartAt)
	e.int(s.StopAt)
	e.strMap(s.Tags)
}

func decSpec(d *rowDec, s *BundleSpec) {
	s.ID, s.Pool, s.Priority = d.str(), d.name(), d.name()
	s.Jobs = rowListDec(d, decJob)
	s.Placement.SameNodeDefault = d.bool()
	s.Placement.SameAz = d.name()
	if d.present() {
		s.Resilience = &Resilience{Pool: d.name(), SameNode: d.name(), SameAz: d.name(), SameCloud: d.name()}
	}
	s.StartAt = d.int()
	s.StopAt = d.int()
	s.Tags = d.strMap()
}

func encJob(e *rowEnc, j *Job) {
	e.str(j.Name)
	r := &j.Requirements
	e.int(r.Capacity)
	e.int(int64(r.Cores))
	e.int(r.GPUCapacity)
	e.str(r.GPUModel)
	e.int(int64(r.ExclusiveGPUs))
	rowList(e, r.Capabilities, func(e *rowEnc, c *ledger.CapabilityRequest) {
		e.str(c.Name)
		e.int(c.Count)
		e.strMap(c.AttributeMatches)
	})
	e.strs(j.CoLocateWith)
	e.strs(j.SeparateFrom)
	e.strs(j.Tolerations)
	e.strs(j.Constraints)
	rowList(e, j.Affinities, func(e *rowEnc, a *Affinity) {
		e.str(a.Expression)
		e.int(int64(a.Weight))
	})
	encLaunch(e, &j.Launch)
}

func decJob(d *rowDec, j *Job) {
	j.Name = d.name()
	r := &j.Requirements
	r.Capacity = d.int()
	r.Cores = int(d.int())
	r.GPUCapacity = d.int()
	r.GPUModel = d.name()
	r.ExclusiveGPUs = int(d.int())
	r.Capabilities = rowListDec(d, func(d *rowDec, c *ledger.CapabilityRequest) {
		c.Name, c.Count, c.AttributeMatches = d.name(), d.int(), d.strMap()
	})
	j.CoLocateWith = d.names()
	j.SeparateFrom = d.names()
	j.Tolerations = d.names()
	j.Constraints = d.strs()
	j.Affinities = rowListDec(d, func(d *rowDec, a *Affinity) {
		a.Expression, a.Weight = d.str(), int(d.int())
	})
	decLaunch(d, &j.Launch)
}

func encLaunch(e *rowEnc, l *Launch) {
	e.str(l.Driver)
	e.strs(l.Command)
	e.strMap(l.Env)
}

func decLaunch(d *rowDec, l *Launch) {
	l.Driver = d.name()
	l.Command = d.strs()
	l.Env = d.strMap()
}

func encReplica(e *rowEnc, r *Replica) {
	e.int(int64(r.Slot))
	e.str(r.Role)
	e.str(r.State)
	rowList(e, r.Jobs, func(e *rowEnc, j *JobPlacement) {
		e.str(j.Name)
		e.str(j.NodeID)
		encGrant(e, &j.Grant)
		e.str(j.Status)
	})
}

func decReplica(d *rowDec, r *Replica) {
	r.Slot = int(d.int())
	r.Role, r.State = d.name(), d.name()
	r.Jobs = rowListDec(d, func(d *rowDec, j *JobPlacement) {
		j.Name, j.NodeID = d.name(), d.name()
		decGrant(d, &j.Grant)
		j.Status = d.name()
	})
}

func encGrant(e *rowEnc, g *ledger.Grant) {
	e.int(g.Capacity)
	e.ints(g.Cores)
	e.present(g.GPU != nil)
	if g.GPU != nil {
		e.int(int64(g.GPU.Index))
		e.int(g.GPU.Capacity)
	}
	e.ints(g.ExclusiveGPUs)
	rowList(e, g.Capabilities, func(e *rowEnc, c *ledger.CapabilityCount) {
		e.str(c.Name)
		e.int(c.Count)
	})
}

func decGrant(d *rowDec, g *ledger.Grant) {
	g.Capacity = d.int()
	g.Cores = d.ints()
	if d.present() {
		g.GPU = &ledger.GPUShare{Index: int(d.int()), Capacity: d.int()}
	}
	g.ExclusiveGPUs = d.ints()
	g.Capabilities = rowListDec(d, func(d *rowDec, c *ledger.CapabilityCount) {
		c.Name, c.Count = d.name(), d.int()
	})
}

func encExplain(e *rowEnc, x *Explain) {
	e.int(int64(x.NodesEvaluated))
	if x.Filtered == nil {
		e.uint(0)
	} else {
		e.count(len(x.Filtered))
		for _, k := range slices.Sorted(maps.Keys(x.Filtered)) {
			e.str(k)
			e.int(int64(x.Filtered[k]))
		}
	}
	e.present(x.NearestMiss != nil)
	if m := x.NearestMiss; m != nil {
		e.str(m.NodeID)
		e.str(m.Stage)
		e.str(m.Detail)
	}
}

func decExplain(d *rowDec) *Explain {
	x := &Explain{NodesEvaluated: int(d.int())}
	if n, isNil := d.count(); !isNil {
		x.Filtered = make(map[string]int, n)
		for range n {
			k := d.name()
			x.Filtered[k] = int(d.int())
		}
	}
	if d.present() {
		x.NearestMiss = &NearestMiss{NodeID: d.name(), Stage: d.name(), Detail: d.str()}
	}
	return x
}
