package session

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/profiles"
	"github.com/iomatrix/iomatrix/results"
)

// A resumed run keeps its file's settings; what is asked may only repeat
// them: each setting asked otherwise is the conflict that names it, and
// what was not asked is taken from the file.
func TestResume(t *testing.T) {
	quick, err := profiles.Load("quick")
	if err != nil {
		t.Fatal(err)
	}
	full, err := profiles.Load("full")
	if err != nil {
		t.Fatal(err)
	}
	d := func(auto bool, c *results.Cap) *results.Document {
		doc := &results.Document{Target: results.TargetInfo{Path: "/mnt/v/iomatrix.dat"}, Cap: c,
			Settings: results.Settings{Profile: "quick", RuntimeNS: int64(20 * time.Second), RampNS: int64(time.Second), SizeBytes: 1 << 30}}
		if auto {
			doc.Settings.Auto = &results.AutoSettings{MinRuntimeNS: int64(4 * time.Second), MaxRuntimeNS: int64(20 * time.Second), PrecisionPct: 2.5}
		}
		return doc
	}
	ours := &results.Cap{CgroupVersion: 1, Cgroup: "/sys/fs/cgroup/blkio/" + cgroup.Parent + "/42-1", Device: "254:0", ReadIOPS: 500}
	theirs := &results.Cap{CgroupVersion: 2, Cgroup: "/sys/fs/cgroup/db.slice", Device: "254:0", WriteIOPS: 100}
	dur := func(d time.Duration) *time.Duration { return &d }
	for _, tc := range []struct {
		name     string
		doc      *results.Document
		asked    Asked
		conflict Conflict
		check    func(*Resumed) bool
	}{
		{"nothing asked", d(false, nil), Asked{}, Conflict{}, func(r *Resumed) bool {
			return r.Target == "/mnt/v/iomatrix.dat" && r.Profile.Name == "quick" && r.Runtime == 20*time.Second && r.Ramp == time.Second && r.Auto == nil
		}},
		{"the same asked", d(false, nil), Asked{Target: "/mnt/v/iomatrix.dat", Profile: quick, Runtime: dur(20 * time.Second), Ramp: dur(time.Second), Size: new(int64(1 << 30))}, Conflict{}, nil},
		{"another target", d(false, nil), Asked{Target: "/mnt/w/iomatrix.dat"}, Conflict{"target", "/mnt/w/iomatrix.dat", "target /mnt/v/iomatrix.dat"}, nil},
		{"another profile", d(false, nil), Asked{Profile: full}, Conflict{"profile", "full", "profile quick"}, nil},
		{"another runtime", d(false, nil), Asked{Runtime: dur(10 * time.Second)}, Conflict{"runtime", "10s", "runtime 20s"}, nil},
		{"auto for fixed", d(false, nil), Asked{Auto: true}, Conflict{"runtime", "auto", "runtime 20s"}, nil},
		{"fixed for auto", d(true, nil), Asked{Runtime: dur(20 * time.Second)}, Conflict{"runtime", "20s", "runtime auto"}, nil},
		{"auto kept", d(true, nil), Asked{Auto: true, Precision: new(0.025)}, Conflict{}, func(r *Resumed) bool { return r.Auto != nil && r.Auto.PrecisionPct == 2.5 }},
		{"other maximum", d(true, nil), Asked{MaxRuntime: dur(30 * time.Second)}, Conflict{Setting: "max-runtime", File: "20s"}, nil},
		{"other precision", d(true, nil), Asked{Precision: new(0.01)}, Conflict{Setting: "precision", File: "2.5%"}, nil},
		{"another ramp", d(false, nil), Asked{Ramp: dur(2 * time.Second)}, Conflict{"ramp", "2s", "ramp 1s"}, nil},
		{"another size", d(false, nil), Asked{Size: new(int64(2 << 30))}, Conflict{"size", "2GiB", "size 1GiB"}, nil},
		{"a cap of an uncapped file", d(false, nil), Asked{Cap: &cgroup.Limit{ReadIOPS: 500}, CapText: "riops=500"}, Conflict{Setting: "cap", Asked: "riops=500"}, nil},
		{"our cap again", d(false, ours), Asked{}, Conflict{}, func(r *Resumed) bool {
			return r.Cap != nil && r.Cap.ReadIOPS == 500 && r.CapSpec == "riops=500" && r.Join == ""
		}},
		{"the same cap asked", d(false, ours), Asked{Cap: &cgroup.Limit{ReadIOPS: 500}, CapText: "riops=500"}, Conflict{}, nil},
		{"another cap", d(false, ours), Asked{Cap: &cgroup.Limit{ReadIOPS: 600}, CapText: "riops=600"}, Conflict{"cap", "riops=600", "cap riops=500"}, nil},
		{"their cgroup joined again", d(false, theirs), Asked{}, Conflict{}, func(r *Resumed) bool { return r.Join == theirs.Cgroup && r.Cap == nil }},
		{"another cgroup", d(false, theirs), Asked{Cgroup: "/sys/fs/cgroup/web.slice"}, Conflict{"cgroup", "/sys/fs/cgroup/web.slice", "cap (wiops=100 in /sys/fs/cgroup/db.slice)"}, nil},
		{"a cap for their cgroup", d(false, theirs), Asked{Cap: &cgroup.Limit{WriteIOPS: 100}, CapText: "wiops=100"}, Conflict{"cap", "wiops=100", "cap wiops=100"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Resume(tc.doc, tc.asked)
			var c *Conflict
			switch {
			case tc.conflict == Conflict{} && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.conflict != Conflict{} && (!errors.As(err, &c) || *c != tc.conflict):
				t.Fatalf("%v (%+v), want the conflict %+v", err, c, tc.conflict)
			case tc.check != nil && !tc.check(r):
				t.Errorf("resumed %+v", r)
			}
		})
	}
}

// A file of a mix the profile no longer holds is not resumed with it: the
// matrix would hold two workloads.
func TestResumeRefusesAnotherMix(t *testing.T) {
	mine, err := profiles.Parse("mine.yaml", []byte("name: mine\npatterns:\n  - {bssplit: 4k/60:16k/40, random_distribution: zipf:1.2, read_pct: 100, queue_depth: 8}\n"))
	if err != nil {
		t.Fatal(err)
	}
	old := mine.Patterns[0]
	doc := &results.Document{Target: results.TargetInfo{Path: "/mnt/v/iomatrix.dat"}, Settings: results.Settings{Profile: "mine", RuntimeNS: int64(time.Second)}}
	doc.Results = []results.Result{{Name: old.Name(), Pattern: old}}
	if _, err := Resume(doc, Asked{Profile: mine}); err != nil {
		t.Fatalf("the same mix refused: %v", err)
	}
	other := old
	other.BSSplit, other.BlockSize = "4k/50:16k/50", 16384
	doc.Results = []results.Result{{Name: other.Name(), Pattern: other}}
	var c *Conflict
	if _, err := Resume(doc, Asked{Profile: mine}); !errors.As(err, &c) || c.Setting != "profile" || !strings.Contains(c.File, other.Name()) {
		t.Errorf("another mix resumed: %v", err)
	}
}
