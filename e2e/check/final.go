package check

import (
	"maps"
	"slices"

	"github.com/amserver/amserver/api"
	"github.com/amserver/amserver/e2e/workload"
)

// FinalRegisters checks each register's value in the final state (a
// linearizable read after the heal) against the acknowledged writes: it
// must be the value of a write that can be the last one, i.e. one that no
// acknowledged write strictly follows in real time. Otherwise an
// acknowledged write is missing from the final state (a lost ack), which
// porcupine only sees when a read happened to follow it. A write of
// unknown outcome may take effect at any time after its call, so it can
// always be the last; a register no write acknowledged may hold 0.
func FinalRegisters(ops []workload.Op, final []api.Bundle) Result {
	c := newCollector("final-registers")
	byKey := map[string][]workload.Op{}
	for _, op := range ops {
		if op.Kind == workload.KindRead || op.Kind == workload.KindCreate {
			continue
		}
		byKey[op.Key] = append(byKey[op.Key], op)
	}
	values := map[string]*api.Bundle{}
	for i := range final {
		values[final[i].ID] = &final[i]
	}
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		c.checked++
		checkRegister(c, key, byKey[key], values[key])
	}
	return c.result()
}

func checkRegister(c *collector, key string, writes []workload.Op, b *api.Bundle) {
	var latest *workload.Op // the acknowledged write called last
	acked := false
	for i, w := range writes {
		if w.Outcome == workload.OK {
			acked = true
			if latest == nil || w.Call > latest.Call {
				latest = &writes[i]
			}
		}
	}
	if b == nil {
		if acked {
			c.kindf(KindLostAck, "register %s is missing from the final state after acknowledged writes", key)
		}
		return
	}
	got, err := workload.RegisterValue(b)
	if err != nil {
		c.addf("register %s in the final state: %v", key, err)
		return
	}
	if !acked && got == 0 {
		return
	}
	for _, w := range writes {
		if w.Value != got || w.Outcome == workload.Fail {
			continue
		}
		if w.Outcome == workload.Unknown || latest == nil || w.Return >= latest.Call {
			return // a write that can be the last one
		}
		c.kindf(KindLostAck, "register %s ends at %d (op %d), but acknowledged op %d (value %d) was called after op %d returned: its write is lost",
			key, got, w.ID, latest.ID, latest.Value, w.ID)
		return
	}
	if acked {
		c.kindf(KindLostAck, "register %s ends at %d, which no write wrote; acknowledged op %d (value %d) is lost", key, got, latest.ID, latest.Value)
		return
	}
	c.addf("register %s ends at %d, which no write wrote", key, got)
}
