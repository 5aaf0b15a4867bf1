package observe

import (
	"fmt"

	"github.com/iomatrix/iomatrix/results"
)

// A tracker turns a source's successive readings of its counters into
// the increase over each interval, without ever producing a negative
// rate:
//   - the first reading, and the first after the source was gone, is a
//     baseline: it yields no interval (what happened before it is not
//     known);
//   - a counter that went back by a 32-bit wrap (it was in the top
//     quarter of the 32-bit range) counts the distance around;
//   - any other step back, or a new identity (a cgroup deleted and
//     created again, a device's number given to another disk, a database
//     that restarted), is a reset: the counters started again from zero
//     within the interval, so the interval's increase is the new reading.
type tracker struct {
	last    []uint64
	lastID  string
	present bool
}

// step is what one reading made of the interval before it.
type step struct {
	delta []uint64 // nil for a baseline
	event string   // "", results.EventReset or results.EventWrap
	why   string
}

const wrapFloor = 1<<32 - 1<<30

// next takes a reading (its identity and counters, and whether the source
// itself says it restarted).
func (t *tracker) next(id string, c []uint64, restarted bool) step {
	defer func() { t.last, t.lastID, t.present = append(t.last[:0], c...), id, true }()
	if !t.present || len(t.last) != len(c) {
		return step{}
	}
	if id != t.lastID {
		return step{delta: c, event: results.EventReset, why: fmt.Sprintf("now %s, was %s", id, t.lastID)}
	}
	if restarted {
		return step{delta: c, event: results.EventReset, why: "restarted"}
	}
	d := make([]uint64, len(c))
	var wrapped bool
	for i, v := range c {
		old := t.last[i]
		switch {
		case v >= old:
			d[i] = v - old
		case old >= wrapFloor && old < 1<<32 && v < 1<<32:
			d[i] = v + 1<<32 - old
			wrapped = true
		default:
			return step{delta: c, event: results.EventReset, why: fmt.Sprintf("a counter went from %d to %d", old, v)}
		}
	}
	if wrapped {
		return step{delta: d, event: results.EventWrap, why: "a 32-bit counter wrapped"}
	}
	return step{delta: d}
}

// gone forgets the source: its next reading is a baseline.
func (t *tracker) gone() { t.present = false }
