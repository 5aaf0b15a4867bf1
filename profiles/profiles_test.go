package profiles

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s--- want\n%s", name, got, want)
	}
}

func TestFullHas137UniquePatterns(t *testing.T) {
	p, err := Builtin("full")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Patterns) != 137 {
		t.Fatalf("full has %d patterns, want 137", len(p.Patterns))
	}
	names := map[string]bool{}
	for _, pat := range p.Patterns {
		if names[pat.Name()] {
			t.Errorf("duplicate %s", pat.Name())
		}
		names[pat.Name()] = true
	}
	for _, n := range []string{"seq-read-1m-qd8", "seq-write-1m-qd8"} {
		if !names[n] {
			t.Errorf("full lacks %s", n)
		}
	}
	// Every combination of the random axes, nothing else.
	count := 0
	for _, bs := range []string{"4k", "8k", "16k"} {
		for _, r := range []int{100, 90, 50, 10, 0} {
			for _, q := range []int{1, 2, 4, 8, 16, 32, 64, 128, 256} {
				n := fmt.Sprintf("rand-%s-r%d-qd%d", bs, r, q)
				if !names[n] {
					t.Errorf("full lacks %s", n)
				}
				count++
			}
		}
	}
	if count+2 != len(names) {
		t.Errorf("%d random + 2 sequential != %d", count, len(names))
	}
	for _, pat := range p.Patterns {
		if pat.Jobs != 1 {
			t.Errorf("%s has %d jobs", pat.Name(), pat.Jobs)
		}
	}
}

func describe(p *Profile) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\ndescription: %s\npatterns: %d\n", p.Name, p.Description, len(p.Patterns))
	for _, pat := range p.Patterns {
		fmt.Fprintf(&b, "%-24s %-10s bs=%-7d read=%-3d qd=%-3d jobs=%d\n", pat.Name(), pat.Access, pat.BlockSize, pat.ReadPct, pat.QueueDepth, pat.Jobs)
	}
	for _, l := range p.Loads {
		fmt.Fprintf(&b, "then %s open-loop at %v %% of its IOPS\n", l.Shape.Name(), l.Shares)
	}
	for _, n := range p.Nomerges {
		fmt.Fprintf(&b, "%s with nomerges=%d\n", n.Shape.Name(), n.Value)
	}
	return b.String()
}

func TestBuiltinsGolden(t *testing.T) {
	counts := map[string]int{"full": 137, "quick": 14, "cdm": 8, "cdm-nvme": 8, "jobs": 7, "iocost": 6, "commit": 18}
	for _, name := range Names() {
		p, err := Builtin(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p.Name != name || len(p.Patterns) != counts[name] {
			t.Errorf("%s: name %q, %d patterns, want %d", name, p.Name, len(p.Patterns), counts[name])
		}
		golden(t, "builtin-"+name+".golden", describe(p))
	}
}

func TestUnknownProfileListsNames(t *testing.T) {
	_, err := Load("fulll")
	if !errors.Is(err, ErrUnknownProfile) {
		t.Fatalf("error %v", err)
	}
	for _, n := range Names() {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("%q does not list %s", err, n)
		}
	}
}

func TestLoadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mine.yaml")
	src := `name: mine
description: two and a product
defaults: {runtime: 30s, ramp: 0s, size: 8GiB}
patterns:
  - {access: sequential, block_size: 128k, read_pct: 100, queue_depth: 4}
  - {block_size: 4k, read_pct: 70, queue_depth: 16, jobs: 4}
  - {access: sequential, block_size: 128k, read_pct: 0, queue_depth: 4, compress_pct: 50, dedupe_pct: 20}
matrix:
  - block_sizes: [8k]
    read_pcts: [100, 0]
    queue_depths: [1, 64]
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if p.Source != path || p.Defaults.Runtime.Seconds() != 30 || !p.Defaults.RampSet || p.Defaults.Size != 8<<30 {
		t.Errorf("profile %+v", p)
	}
	golden(t, "file-mine.golden", describe(p))
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestMalformedProfiles(t *testing.T) {
	cases := map[string]string{
		"unknown-key": `name: x
patterns:
  - {block_size: 4k, read_pct: 50, queue_depth: 1, iodepth: 4}
`,
		"unknown-top-key": `name: x
runtime: 30s
`,
		"reference-not-a-spec": `name: x
patterns:
  - {block_size: 4k, read_pct: 100, queue_depth: 1}
reference: randread:4k
`,
		"reference-a-mapping": `name: x
patterns:
  - {block_size: 4k, read_pct: 100, queue_depth: 1}
reference: {block_size: 4k, read_pct: 100, queue_depth: 1}
`,
		"bs-not-a-size": `name: x
matrix:
  - block_sizes: [4k, four]
    read_pcts: [100]
    queue_depths: [1]
`,
		"bs-not-aligned": `name: x
patterns:
  - {block_size: 3000, read_pct: 50, queue_depth: 1}
`,
		"read-out-of-range": `name: x
patterns:
  - {block_size: 4k, read_pct: 101, queue_depth: 1}
`,
		"read-axis-out-of-range": `name: x
matrix:
  - block_sizes: [4k]
    read_pcts: [100, -1]
    queue_depths: [1]
`,
		"bssplit-not-100": `name: x
patterns:
  - {bssplit: 4k/50:16k/40, read_pct: 50, queue_depth: 8}
`,
		"bssplit-and-bs": `name: x
patterns:
  - {bssplit: 4k/50:16k/50, block_size: 4k, read_pct: 50, queue_depth: 8}
`,
		"zipf-sequential": `name: x
patterns:
  - {access: sequential, block_size: 4k, random_distribution: zipf:1.2, read_pct: 50, queue_depth: 8}
`,
		"sync-on-reads": `name: x
patterns:
  - {access: sequential, block_size: 4k, read_pct: 100, queue_depth: 1, sync: dsync}
`,
		"sync-qd8": `name: x
patterns:
  - {access: sequential, block_size: 4k, read_pct: 0, queue_depth: 8, sync: "fdatasync:1"}
`,
		"sync-unknown": `name: x
patterns:
  - {access: sequential, block_size: 4k, read_pct: 0, queue_depth: 1, sync: o_sync}
`,
		"qd-zero": `name: x
patterns:
  - {block_size: 4k, read_pct: 50, queue_depth: 0}
`,
		"qd-257": `name: x
matrix:
  - block_sizes: [4k]
    read_pcts: [100]
    queue_depths: [1, 257]
`,
		"empty-axis": `name: x
matrix:
  - block_sizes: []
    read_pcts: [100]
    queue_depths: [1]
`,
		"missing-axis": `name: x
matrix:
  - block_sizes: [4k]
    read_pcts: [100]
`,
		"duplicate-names": `name: x
patterns:
  - {block_size: 4k, read_pct: 100, queue_depth: 1}
matrix:
  - block_sizes: [4k, 8k]
    read_pcts: [100]
    queue_depths: [1]
`,
		"not-yaml": "name: x\npatterns: [\n",
		"no-name": `patterns:
  - {block_size: 4k, read_pct: 100, queue_depth: 1}
`,
		"no-patterns":       "name: x\n",
		"empty":             "",
		"bad-duration":      "name: x\ndefaults: {runtime: soon}\npatterns:\n  - {block_size: 4k, read_pct: 1, queue_depth: 1}\n",
		"repeated-key":      "name: x\nname: y\n",
		"jobs-too-many":     "name: x\npatterns:\n  - {block_size: 4k, read_pct: 1, queue_depth: 1, jobs: 65}\n",
		"access-unknown":    "name: x\npatterns:\n  - {access: zigzag, block_size: 4k, read_pct: 1, queue_depth: 1}\n",
		"pattern-is-list":   "name: x\npatterns:\n  - [4k, 1, 1]\n",
		"loads-over-100":    "name: x\npatterns:\n  - {block_size: 4k, read_pct: 1, queue_depth: 1, loads: 120%}\n",
		"loads-iops":        "name: x\npatterns:\n  - {block_size: 4k, read_pct: 1, queue_depth: 1, loads: 3000}\n",
		"loads-nan":         "name: x\npatterns:\n  - {block_size: 4k, read_pct: 1, queue_depth: 1, loads: NaN%}\n",
		"loads-inf":         "name: x\npatterns:\n  - {block_size: 4k, read_pct: 1, queue_depth: 1, loads: \"50%,Inf%\"}\n",
		"loads-negative":    "name: x\npatterns:\n  - {block_size: 4k, read_pct: 1, queue_depth: 1, loads: -5%}\n",
		"loads-twice":       "name: x\npatterns:\n  - {block_size: 4k, read_pct: 1, queue_depth: 1, loads: \"50%,50.0%\"}\n",
		"nomerges-3":        "name: x\npatterns:\n  - {block_size: 4k, read_pct: 1, queue_depth: 1, nomerges: 3}\n",
		"nomerges-word":     "name: x\npatterns:\n  - {block_size: 4k, read_pct: 1, queue_depth: 1, nomerges: off}\n",
		"loads-exponent":    "name: x\npatterns:\n  - {block_size: 4k, read_pct: 1, queue_depth: 1, loads: 5e1%}\n",
		"two-documents":     "name: x\npatterns:\n  - {block_size: 4k, read_pct: 1, queue_depth: 1}\n---\nname: y\npatterns:\n  - {block_size: 8k, read_pct: 1, queue_depth: 1}\n",
		"trailing-document": "name: x\npatterns:\n  - {block_size: 4k, read_pct: 1, queue_depth: 1}\n---\n",
		"bssplit-too-large": "name: x\npatterns:\n  - {bssplit: 128m/100, read_pct: 1, queue_depth: 1}\n",
		"runtime-negative":  "name: x\ndefaults: {runtime: -5}\npatterns:\n  - {block_size: 4k, read_pct: 1, queue_depth: 1}\n",
		"size-nan":          "name: x\ndefaults: {size: NaN}\npatterns:\n  - {block_size: 4k, read_pct: 1, queue_depth: 1}\n",
		"compress-101":      "name: x\npatterns:\n  - {block_size: 4k, read_pct: 0, queue_depth: 1, compress_pct: 101}\n",
		"dedupe-reads":      "name: x\npatterns:\n  - {block_size: 4k, read_pct: 100, queue_depth: 1, dedupe_pct: 50}\n",
	}
	var b strings.Builder
	for _, name := range sortedCaseNames(cases) {
		_, err := Parse(name+".yaml", []byte(cases[name]))
		var pe *ParseError
		if !errors.As(err, &pe) || !errors.Is(err, ErrBadProfile) {
			t.Errorf("%s: error %v, want a ParseError", name, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), name+".yaml") {
			t.Errorf("%s: %q does not name the file", name, err)
		}
		fmt.Fprintf(&b, "%s\n", err)
	}
	golden(t, "malformed.golden", b.String())
}

func sortedCaseNames(m map[string]string) []string {
	return slices.Sorted(maps.Keys(m))
}

func TestEstimate(t *testing.T) {
	p := &Profile{Patterns: make([]results.Pattern, 137)}
	if got := p.Estimate(60e9, 5e9); got.Minutes() != 137*65.0/60 {
		t.Errorf("estimate %v", got)
	}
}

// A bare number in a duration field is seconds, as on the flags
// (--runtime 30); an error still names the file and the line.
func TestDurationsInSeconds(t *testing.T) {
	const pats = "patterns:\n  - {block_size: 4k, read_pct: 1, queue_depth: 1}\n"
	for _, c := range []struct {
		defaults      string
		runtime, ramp time.Duration
		err           string
	}{
		{defaults: "{runtime: 30, ramp: 1.5}", runtime: 30 * time.Second, ramp: 1500 * time.Millisecond},
		{defaults: "{runtime: 90, ramp: 0}", runtime: 90 * time.Second},
		{defaults: "{runtime: 1m30s, ramp: 500ms}", runtime: 90 * time.Second, ramp: 500 * time.Millisecond},
		{defaults: "\n  runtime: 0\n", err: "d.yaml:3: runtime: must be positive"},
		{defaults: "\n  runtime: 30\n  ramp: -1\n", err: `d.yaml:4: ramp: "-1" is not a duration`},
		{defaults: "\n  runtime: 2x\n", err: `d.yaml:3: runtime: "2x" is not a duration`},
	} {
		p, err := Parse("d.yaml", []byte("name: x\ndefaults: "+c.defaults+"\n"+pats))
		if c.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.err) {
				t.Errorf("defaults %q: error %v, want %q", c.defaults, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("defaults %q: %v", c.defaults, err)
			continue
		}
		if d := p.Defaults; d.Runtime != c.runtime || d.Ramp != c.ramp || !d.RampSet {
			t.Errorf("defaults %q: %+v, want runtime %v ramp %v", c.defaults, d, c.runtime, c.ramp)
		}
	}
}

func TestWithContent(t *testing.T) {
	p, err := Builtin("iocost")
	if err != nil {
		t.Fatal(err)
	}
	q, err := p.WithContent(50, 10)
	if err != nil {
		t.Fatal(err)
	}
	for i, pat := range q.Patterns {
		want := p.Patterns[i]
		if want.Writes() {
			want.Compress, want.Dedupe = 50, 10
		}
		if pat != want {
			t.Errorf("pattern %d: %+v, want %+v", i, pat, want)
		}
	}
	if p.Patterns[len(p.Patterns)-1].Compress != 0 {
		t.Error("the profile itself changed")
	}
	if _, err := p.WithContent(101, 0); !pattern.IsField(err, "compress_pct") {
		t.Errorf("compress 101: %v", err)
	}
}

// The sentinel of a sweep: the profile's reference: key, or its plain
// random read of the smallest block size at the deepest queue depth up to
// 32 (the shallowest above where none is that shallow), fewest jobs, or
// its first pattern.
func TestSentinel(t *testing.T) {
	for name, want := range map[string]string{
		"full": "rand-4k-r100-qd32", "quick": "rand-4k-r100-qd32", "cdm": "rand-4k-r100-qd32", "cdm-nvme": "rand-4k-r100-qd32-j16",
		"iocost": "rand-4k-r100-qd64", "jobs": "rand-16k-r70-qd1", "commit": "seq-write-4k-qd1",
	} {
		p, err := Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Sentinel().Name(); got != want {
			t.Errorf("%s: sentinel %s, want %s", name, got, want)
		}
	}
	for _, c := range []struct{ yaml, want string }{
		{"name: x\npatterns:\n  - {block_size: 4k, read_pct: 0, queue_depth: 32}\nmatrix:\n  - block_sizes: [16k, 8k]\n    read_pcts: [100]\n    queue_depths: [64, 1, 16, 128]\n    jobs: [2, 1]\n",
			"rand-8k-r100-qd16"},
		{"name: x\npatterns:\n  - {block_size: 4k, read_pct: 100, queue_depth: 8, random_distribution: zipf:1.2}\n  - {block_size: 4k, read_pct: 100, queue_depth: 256}\n  - {block_size: 4k, read_pct: 100, queue_depth: 64}\n",
			"rand-4k-r100-qd64"},
		{"name: x\npatterns:\n  - {block_size: 4k, read_pct: 100, queue_depth: 1}\nreference: randrw:16k:8:70\n", "rand-16k-r70-qd8"},
	} {
		p, err := Parse("x.yaml", []byte(c.yaml))
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Sentinel().Name(); got != c.want {
			t.Errorf("sentinel %s, want %s, of\n%s", got, c.want, c.yaml)
		}
	}
}
