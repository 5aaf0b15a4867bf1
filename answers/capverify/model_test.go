package capverify

import (
	"math"
	"testing"

	"github.com/iomatrix/iomatrix/cgroup"
)

func TestCapModel(t *testing.T) {
	l := cgroup.Limit{ReadIOPS: 10000, WriteIOPS: 10000}
	for _, c := range []struct {
		read    int
		u       float64
		want    float64
		binding bool
	}{
		{90, 50000, 11111.11, true}, // reads hit the cap, writes are a ninth
		{50, 50000, 20000, true},
		{100, 50000, 10000, true},
		{0, 50000, 10000, true},
		{50, 15000, 15000, false}, // the device is slower than the cap
		{50, 21000, 20000, false}, // within 10 %: not binding, U or the cap
	} {
		got, binding := Expected(l, c.read, 16384, 1, c.u)
		if math.Abs(got-c.want) > 0.01 || binding != c.binding {
			t.Errorf("read %d U %v: %v %v, want %v %v", c.read, c.u, got, binding, c.want, c.binding)
		}
	}
	// Bandwidth caps count bytes; large I/Os split into several requests
	// count several times against IOPS caps.
	if got, _ := Expected(cgroup.Limit{ReadBPS: 100 << 20}, 100, 1<<20, 2, 0); got != 100 {
		t.Errorf("rbps: %v", got)
	}
	if got, _ := Expected(cgroup.Limit{ReadIOPS: 2000}, 100, 1<<20, 2, 0); got != 1000 {
		t.Errorf("split: %v", got)
	}
	if got, binding := Expected(cgroup.Limit{WriteIOPS: 5}, 100, 4096, 1, 3000); got != 3000 || binding {
		t.Errorf("write cap on reads: %v %v", got, binding)
	}
}
