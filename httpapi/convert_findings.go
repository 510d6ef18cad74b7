package httpapi

import (
	"fmt"

	"github.com/amserver/amserver/fsm"
	"github.com/amserver/amserver/internal/convert"
)

// Conversion between the wire types (api) and the FSM's follows from the
// types (internal/convert): fields pair up by name, and the FSM field's
// unit tag says how a quantity or a time converts. What remains here is
// what the types cannot say: ids from the path, defaults, and the fields a
// read computes.

// jobFindings turns conversion problems into invalidRequirement findings:
// bundle-level ones first, then each job's in job order under the job's
// name, as static validation orders its own.
func jobFindings(problems []convert.Problem, jobName func(i int) string) []fsm.Finding {
	var bundle, jobs []fsm.Finding
	for _, p := range problems {
		f := problemFinding(p)
		if len(p.Path) > 0 && (p.Path[0].Name == "restart" || p.Path[0].Name == "ttlAfterFinished") {
			f.Code = fsm.CodeInvalidRestart // the batch fields' own code, whatever is wrong with them
		}
		if len(p.Path) > 2 && p.Path[0].Name == "jobs" && p.Path[1].Index >= 0 {
			f.Job = jobName(p.Path[1].Index)
			f.Message = fmt.Sprintf("%s %v", convert.Field(p.Path[2:]), p.Err)
			jobs = append(jobs, f)
			continue
		}
		bundle = append(bundle, f)
	}
	return append(bundle, jobs...)
}

// problemFinding is a conversion problem as a finding: the value is not
// one the FSM can hold, an invalidRequirement.
func problemFinding(p convert.Problem) fsm.Finding {
	return fsm.Finding{Code: fsm.CodeInvalidRequirement, Message: p.Error()}
}

// invalid is the first problem as a 422 carrying it as its one finding
// (DESIGN §6.2), for resources whose validation reports only its first
// (nodes, pools, services, caps).
func invalid(problems []convert.Problem) error {
	if len(problems) == 0 {
		return nil
	}
	return &fsm.FindingError{Finding: problemFinding(problems[0])}
}
