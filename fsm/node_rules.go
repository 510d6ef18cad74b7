package fsm

// NodeRules say which nodes a job may run on and which it prefers
// (DESIGN §3): the taints it tolerates, its constraints and affinities.
type NodeRules struct {
	Tolerations []string   `json:"tolerations,omitempty" row:"5,intern"`
	Constraints []string   `json:"constraints,omitempty" row:"6"`
	Affinities  []Affinity `json:"affinities,omitempty" row:"7"`
}

// EditRules returns the job's node rules to change, giving it some first.
// It is for building a spec: a spec in the state is shared by the rows
// cloned from it and is never changed in place.
func (j *Job) EditRules() *NodeRules {
	if j.NodeRules == nil {
		j.NodeRules = &NodeRules{}
	}
	return j.NodeRules
}

// Tolerations are the node taints the job may run beside.
func (j *Job) Tolerations() []string {
	if j.NodeRules == nil {
		return nil
	}
	return j.NodeRules.Tolerations
}

// Constraints are the CEL expressions a node must satisfy.
func (j *Job) Constraints() []string {
	if j.NodeRules == nil {
		return nil
	}
	return j.NodeRules.Constraints
}

// Affinities are the weighted CEL preferences among nodes.
func (j *Job) Affinities() []Affinity {
	if j.NodeRules == nil {
		return nil
	}
	return j.NodeRules.Affinities
}
