package ledger

import (
	"encoding/json"
	"fmt"
	"math/bits"
)

// maxCoreIndex bounds decoded core indices so a corrupt document cannot make
// us allocate an absurd bitset.
const maxCoreIndex = 1 << 24

// CoreSet is a bitset of pinned core indices.
//
// It is a value type: With and Without return new sets and never write to the
// receiver, so a set held in a Usage can be shared. Sets are kept canonical (no
// trailing zero words, the empty set is nil) so that equal sets are also
// reflect.DeepEqual, which lets a release restore a bit-identical state.
type CoreSet []uint64

// Has reports whether core i is in the set.
func (c CoreSet) Has(i int) bool {
	if i < 0 {
		return false
	}
	w := i / 64
	return w < len(c) && c[w]&(1<<(uint(i)%64)) != 0
}

// Count is the number of cores in the set.
func (c CoreSet) Count() int {
	n := 0
	for _, w := range c {
		n += bits.OnesCount64(w)
	}
	return n
}

// With returns a new set holding c and cores. Negative indices name no core
// and are ignored.
func (c CoreSet) With(cores ...int) CoreSet {
	top := len(c)*64 - 1
	for _, i := range cores {
		top = max(top, i)
	}
	out := make(CoreSet, (top+64)/64)
	copy(out, c)
	for _, i := range cores {
		if i >= 0 {
			out[i/64] |= 1 << (uint(i) % 64)
		}
	}
	return out.trim()
}

// Without returns a new set holding c minus cores.
func (c CoreSet) Without(cores ...int) CoreSet {
	out := make(CoreSet, len(c))
	copy(out, c)
	for _, i := range cores {
		if i >= 0 && i/64 < len(out) {
			out[i/64] &^= 1 << (uint(i) % 64)
		}
	}
	return out.trim()
}

// Slice lists the cores in ascending order; nil for the empty set.
func (c CoreSet) Slice() []int {
	n := c.Count()
	if n == 0 {
		return nil
	}
	out := make([]int, 0, n)
	for w, word := range c {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			out = append(out, w*64+b)
			word &^= 1 << uint(b)
		}
	}
	return out
}

// highest is the largest core in the set, or -1 when empty.
func (c CoreSet) highest() int {
	c = c.trim()
	if len(c) == 0 {
		return -1
	}
	last := len(c) - 1
	return last*64 + 63 - bits.LeadingZeros64(c[last])
}

// trim drops trailing zero words in place; only call it on a set you own.
func (c CoreSet) trim() CoreSet {
	n := len(c)
	for n > 0 && c[n-1] == 0 {
		n--
	}
	if n == 0 {
		return nil
	}
	return c[:n]
}

// MarshalJSON encodes the set as its ascending list of core indices, which is
// what an operator reading a snapshot or the API expects to see.
func (c CoreSet) MarshalJSON() ([]byte, error) {
	s := c.Slice()
	if s == nil {
		s = []int{}
	}
	return json.Marshal(s)
}

// UnmarshalJSON decodes a list of core indices.
func (c *CoreSet) UnmarshalJSON(b []byte) error {
	var s []int
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	for _, i := range s {
		if i < 0 || i > maxCoreIndex {
			return fmt.Errorf("ledger: core index %d out of range", i)
		}
	}
	*c = CoreSet(nil).With(s...)
	return nil
}
