package check

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/amserver/amserver/e2e/workload"
)

// regInput is what porcupine sees as an operation's input: the call, with
// everything the model needs to judge it.
type regInput struct {
	Key     string
	Kind    workload.Kind
	Value   int64 // written value (write, cas)
	Expect  int64 // cas
	Outcome workload.Outcome
}

// regOutput is an operation's output: the value an ok read returned.
type regOutput struct {
	Value int64
}

// regMeta labels an operation in the visualization.
type regMeta struct {
	ID      int
	Process int
	Server  string
	Index   uint64
	Code    string
}

// checkOperations is porcupine's verbose checker, a seam so tests can make
// it time out deterministically.
var checkOperations = porcupine.CheckOperationsVerbose

// Linearizable checks the CAS registers' history with porcupine, one
// partition per key. It returns porcupine's HTML visualization when the
// check does not pass (nil when it does). A checker timeout is a failure:
// an unproven history is not a linearizable one.
func Linearizable(ops []workload.Op, timeout time.Duration) (Result, []byte) {
	c := newCollector("linearizable")
	hist, examined := registerOps(ops)
	c.checked = examined
	model := registerModel()
	res, info := checkOperations(model, hist, timeout)
	if res == porcupine.Ok {
		return c.result(), nil
	}
	if res == porcupine.Unknown {
		c.addf("porcupine timed out after %s on %d operations: linearizability not established", timeout, len(hist))
	} else {
		explainIllegal(c, partitionByKey(hist), info)
		if c.total == 0 {
			c.addf("porcupine found the history not linearizable")
		}
	}
	var buf bytes.Buffer
	if err := porcupine.Visualize(model, info, &buf); err != nil {
		c.addf("visualization failed: %v", err)
		return c.result(), nil
	}
	return c.result(), buf.Bytes()
}

// registerOps turns the history's register operations into porcupine
// operations, and counts the register operations it examined. Failed
// reads, writes and cas constrain nothing and are dropped. An unknown
// write or cas gets a return after every other operation: it may take
// effect at any point after its call, or never (linearized at the very
// end, where nothing observes it).
//
// An unknown write or cas whose value no read returned and no cas
// expected is dropped too: appending it at the end extends any
// linearization of the rest, and removing it from a linearization leaves
// one (it is followed, until the next write, only by operations its value
// cannot affect). This keeps the search small when faults leave many
// writes in doubt.
func registerOps(ops []workload.Op) ([]porcupine.Operation, int) {
	end := int64(0)
	procs := map[int]int{}
	observed := map[int64]bool{}
	for _, op := range ops {
		end = max(end, op.Call, op.Return)
		procs[op.Process] = 0
		switch {
		case op.Kind == workload.KindRead && op.Outcome == workload.OK:
			observed[op.Value] = true
		case op.Kind == workload.KindCAS:
			observed[op.Expect] = true
		}
	}
	// porcupine's visualization wants dense, zero-based client ids.
	for i, p := range slices.Sorted(maps.Keys(procs)) {
		procs[p] = i
	}
	var out []porcupine.Operation
	examined := 0
	for _, op := range ops {
		if op.Kind != workload.KindRead && op.Kind != workload.KindWrite && op.Kind != workload.KindCAS {
			continue
		}
		examined++
		if !registerOp(op) || op.Outcome == workload.Unknown && !observed[op.Value] {
			continue
		}
		ret := max(op.Return, op.Call)
		if op.Outcome == workload.Unknown && end < math.MaxInt64 {
			ret = end + 1
		}
		out = append(out, porcupine.Operation{
			ClientId: procs[op.Process],
			Input:    regInput{Key: op.Key, Kind: op.Kind, Value: op.Value, Expect: op.Expect, Outcome: op.Outcome},
			Call:     op.Call, Output: regOutput{Value: op.Value}, Return: ret,
			Metadata: regMeta{ID: op.ID, Process: op.Process, Server: op.Server, Index: op.Index, Code: op.Code},
		})
	}
	return out, examined
}

// registerOp reports whether op can constrain the register.
func registerOp(op workload.Op) bool {
	switch op.Kind {
	case workload.KindRead:
		return op.Outcome == workload.OK
	case workload.KindWrite, workload.KindCAS:
		return op.Outcome == workload.OK || op.Outcome == workload.Unknown
	}
	return false
}

func registerModel() porcupine.Model {
	return porcupine.Model{
		Partition: partitionByKey,
		Init:      func() any { return int64(0) },
		Step:      stepRegister,
		Hash: func(s any) uint64 {
			v, _ := s.(int64)
			return uint64(v)
		},
		DescribeOperation: describeOp,
		DescribeState: func(s any) string {
			v, _ := s.(int64)
			return strconv.FormatInt(v, 10)
		},
		DescribeOperationMetadata: func(m any) string {
			md, ok := m.(regMeta)
			if !ok {
				return ""
			}
			return fmt.Sprintf("op %d, process %d, server %s, index %d %s", md.ID, md.Process, md.Server, md.Index, md.Code)
		},
	}
}

// stepRegister is the CAS register's sequential specification.
func stepRegister(state, input, output any) (bool, any) {
	st, _ := state.(int64)
	in, ok1 := input.(regInput)
	out, ok2 := output.(regOutput)
	if !ok1 || !ok2 {
		return false, st
	}
	switch in.Kind {
	case workload.KindRead:
		return out.Value == st, st
	case workload.KindWrite:
		return true, in.Value // ok, or unknown and taking effect here
	case workload.KindCAS:
		switch in.Outcome {
		case workload.OK:
			return st == in.Expect, in.Value
		case workload.Unknown:
			// Applied here if the condition holds; otherwise it is a no-op
			// (the server checks modifyIndex, which an internal placement
			// write can bump, so even a matching value may not apply).
			if st == in.Expect {
				return true, in.Value
			}
			return true, st
		default: // a failed cas changes nothing
			return true, st
		}
	}
	return false, st
}

func describeOp(input, output any) string {
	in, _ := input.(regInput)
	out, _ := output.(regOutput)
	var s string
	switch in.Kind {
	case workload.KindRead:
		s = fmt.Sprintf("read %s → %d", in.Key, out.Value)
	case workload.KindWrite:
		s = fmt.Sprintf("write %s := %d", in.Key, in.Value)
	case workload.KindCAS:
		s = fmt.Sprintf("cas %s %d → %d", in.Key, in.Expect, in.Value)
	default:
		s = fmt.Sprintf("%s %s", in.Kind, in.Key)
	}
	if in.Outcome != workload.OK {
		s += " (" + string(in.Outcome) + ")"
	}
	return s
}

// partitionByKey splits the history per register, keys in sorted order.
func partitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	byKey := map[string][]porcupine.Operation{}
	for _, op := range history {
		in, _ := op.Input.(regInput)
		byKey[in.Key] = append(byKey[in.Key], op)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([][]porcupine.Operation, len(keys))
	for i, k := range keys {
		out[i] = byKey[k]
	}
	return out
}

// explainIllegal names, for each partition porcupine could not linearize
// fully, the earliest-returning operation outside its longest linearizable
// prefix: usually the stale read or lost write to look at first.
func explainIllegal(c *collector, parts [][]porcupine.Operation, info porcupine.LinearizationInfo) {
	partials := info.PartialLinearizationsOperations()
	for i, part := range parts {
		if i >= len(partials) {
			break
		}
		longest := 0
		seen := map[int]bool{}
		for _, lin := range partials[i] {
			if len(lin) > longest {
				longest = len(lin)
				clear(seen)
				for _, op := range lin {
					md, _ := op.Metadata.(regMeta)
					seen[md.ID] = true
				}
			}
		}
		if longest >= len(part) {
			continue
		}
		in, _ := part[0].Input.(regInput)
		culprit := firstOutside(part, seen)
		c.addf("key %s: not linearizable; longest linearizable prefix holds %d of %d operations; first operation left out: %s",
			in.Key, longest, len(part), culprit)
	}
}

func firstOutside(part []porcupine.Operation, seen map[int]bool) string {
	var best *porcupine.Operation
	for i := range part {
		md, _ := part[i].Metadata.(regMeta)
		if !seen[md.ID] && (best == nil || part[i].Return < best.Return) {
			best = &part[i]
		}
	}
	if best == nil {
		return "none"
	}
	md, _ := best.Metadata.(regMeta)
	return fmt.Sprintf("op %d (%s, process %d, server %s, %s..%s)", md.ID, describeOp(best.Input, best.Output),
		md.Process, md.Server, time.Duration(best.Call), time.Duration(best.Return))
}
