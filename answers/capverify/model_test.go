package capverify

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/sysfs"
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

// A limit on reads and writes together (a cloud volume's IOPS and
// throughput) holds the total, whatever the share: each I/O counts once
// against it, or once per request where the block layer splits it.
func TestCapModelCombined(t *testing.T) {
	for _, c := range []struct {
		name  string
		l     Limits
		r     float64
		bs    int64
		split int
		u     float64
		want  float64
		bind  bool
	}{
		{"iops, reads", Limits{IOPS: 3000}, 1, 4096, 1, 0, 3000, true},
		{"iops, writes", Limits{IOPS: 3000}, 0, 4096, 1, 0, 3000, true},
		{"iops, mixed", Limits{IOPS: 3000}, 0.7, 4096, 1, 0, 3000, true},
		{"iops, split", Limits{IOPS: 3000}, 0.5, 1 << 20, 4, 0, 750, true},
		{"bps", Limits{BPS: 125 << 20}, 0.5, 16 << 10, 1, 0, 8000, true},
		{"bps below iops", Limits{IOPS: 16000, BPS: 125 << 20}, 1, 1 << 20, 8, 0, 125, true},
		{"iops below bps", Limits{IOPS: 3000, BPS: 125 << 20}, 0.3, 4096, 1, 0, 3000, true},
		// With per-direction limits beside it, the tightest term sets the
		// total: at 90 % reads riops=1000 allows 1,111.
		{"riops tighter", Limits{Limit: cgroup.Limit{ReadIOPS: 1000}, IOPS: 3000}, 0.9, 4096, 1, 0, 1111.11, true},
		{"iops tighter", Limits{Limit: cgroup.Limit{ReadIOPS: 1000}, IOPS: 1050}, 0.9, 4096, 1, 0, 1050, true},
		// A known uncapped figure still caps the model, as for a cgroup.
		{"the device slower", Limits{IOPS: 3000}, 1, 4096, 1, 2000, 2000, false},
	} {
		got, bind := ExpectedShare(c.l, c.r, c.bs, c.split, c.u)
		if math.Abs(got-c.want) > 0.01 || bind != c.bind {
			t.Errorf("%s: %v %v, want %v %v", c.name, got, bind, c.want, c.bind)
		}
	}
}

func TestParseProvisioned(t *testing.T) {
	good := map[string]Limits{
		"iops=3000":                          {IOPS: 3000, Provisioned: true},
		"iops=3000,bps=125MiB":               {IOPS: 3000, BPS: 125 << 20, Provisioned: true},
		"riops=5000, wiops=2000, wbps=1g":    {Limit: cgroup.Limit{ReadIOPS: 5000, WriteIOPS: 2000, WriteBPS: 1 << 30}, Provisioned: true},
		"IOPS=16000,rbps=250MiB,riops=16000": {Limit: cgroup.Limit{ReadIOPS: 16000, ReadBPS: 250 << 20}, IOPS: 16000, Provisioned: true},
	}
	for in, want := range good {
		if got, err := ParseProvisioned(in); err != nil || got != want {
			t.Errorf("ParseProvisioned(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	bad := map[string]string{
		"":                "empty (give riops=N, wiops=N, rbps=SIZE, wbps=SIZE, iops=N or bps=SIZE)",
		"iops=0":          "iops=0 is not a positive whole number",
		"iops=-3000":      "iops=-3000",
		"iops=3k":         "iops=3k",
		"iops=NaN":        "iops=NaN",
		"bps=fast":        "bps=fast is not a positive size",
		"iops=1,iops=2":   "iops given twice",
		"tiops=5":         `unknown key "tiops" (riops, wiops, rbps, wbps, iops, bps)`,
		"iops":            "is not key=value",
		"iops=3000,":      "is not key=value",
		"iops=3000;bps=1": "iops=3000;bps=1",
	}
	for in, mention := range bad {
		_, err := ParseProvisioned(in)
		if !errors.Is(err, ErrBadLimits) || !strings.Contains(err.Error(), mention) {
			t.Errorf("ParseProvisioned(%q) error %v, want one naming %q", in, err, mention)
		}
	}
}

// The limits go into the results as provisioned, and come back whole.
func TestProvisionedRecord(t *testing.T) {
	l, err := ParseProvisioned("riops=4000,iops=3000,bps=125MiB")
	if err != nil {
		t.Fatal(err)
	}
	c := l.Record("254:16")
	if !c.Provisioned || c.CgroupVersion != 0 || c.Cgroup != "" || c.Device != "254:16" || c.ReadIOPS != 4000 || c.IOPS != 3000 || c.BPS != 125<<20 {
		t.Errorf("recorded %+v", c)
	}
	back := LimitsOf(c)
	back.Device = sysfs.DevNum{}
	if back != l {
		t.Errorf("LimitsOf(Record) = %+v, want %+v", back, l)
	}
	if LimitsOf(nil) != (Limits{}) {
		t.Errorf("LimitsOf(nil) = %+v", LimitsOf(nil))
	}
}
