package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/testenv"
)

const fleetDir = "../../report/testdata/fleet/"

// fit's verdicts as golden files: a need the cell carries (exit 0, its
// headroom), the same need doubled (exit 1, naming the cell), a workload
// of three systems whose caps add up to no more than the cell, and a
// fleet judged on its worst member.
func TestFitGolden(t *testing.T) {
	dir := t.TempDir()
	fleet := filepath.Join(dir, "fleet.json")
	if r := runInProcess(append([]string{"merge", "-o", fleet}, fleetDir+"node-a.json", fleetDir+"node-b.json", fleetDir+"node-c.json")...); r.code != 0 {
		t.Fatalf("merge: %s", r.stderr)
	}
	for _, tc := range []struct {
		golden string
		args   []string
		code   int
	}{
		{"fits.txt", []string{fleetDir + "node-a.json", "--need", "read=1500,write=1500,bs=4k,qd=1,p99<5ms"}, 0},
		{"double.txt", []string{fleetDir + "node-a.json", "--need", "read=3000,write=3000,bs=4k,qd=1,p99<5ms"}, 1},
		{"workload.txt", []string{fleetDir + "node-a.json", "--workload", "testdata/fit/systems.yaml"}, 0},
		{"workload.json", []string{fleetDir + "node-a.json", "--workload", "testdata/fit/systems.yaml", "--format", "json"}, 0},
		// A version 2 file of the same rates: the same verdict, the same
		// golden files (written from version 1 before version 2 was).
		{"workload.txt", []string{fleetDir + "node-a.json", "--workload", "testdata/fit/systems-v2.yaml"}, 0},
		{"workload.json", []string{fleetDir + "node-a.json", "--workload", "testdata/fit/systems-v2.yaml", "--format", "json"}, 0},
		{"fleet.txt", []string{fleet, "--need", "read=1500,write=1500,bs=4k,qd=1,p99<5ms"}, 0},
		{"no-qd.txt", []string{fleetDir + "node-a.json", "--need", "read=1000,bs=16k"}, 0},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			r := runInProcess(append([]string{"fit"}, tc.args...)...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, tc.code, r.stdout, r.stderr)
			}
			golden := filepath.Join("testdata", "fit", tc.golden)
			if *updateGolden {
				testenv.Must(t, os.WriteFile(golden, []byte(r.stdout), 0o644))
			}
			want, err := os.ReadFile(golden)
			testenv.Must(t, err)
			if r.stdout != string(want) {
				t.Errorf("differs from %s (-update):\n%s", golden, r.stdout)
			}
		})
	}
}

// The doubled need names the cell it fails on, and the workload's caps
// add up to no more than that cell's IOPS.
func TestFitVerdicts(t *testing.T) {
	r := runInProcess("fit", fleetDir+"node-a.json", "--need", "read=3000,write=3000,bs=4k,qd=1,p99<5ms")
	if r.code != exitFailure || !strings.Contains(r.stdout, "rand-4k-r50-qd1") || !strings.Contains(r.stdout, "needed") {
		t.Errorf("doubled need: exit %d:\n%s", r.code, r.stdout)
	}
	w := runInProcess("fit", fleetDir+"node-a.json", "--workload", "testdata/fit/systems.yaml")
	var sum, cell float64
	for _, line := range strings.Split(w.stdout, "\n") {
		if c, ok := strings.CutPrefix(strings.TrimSpace(line), "--cap "); ok {
			var r, wr float64
			if _, err := fmt.Sscanf(c, "riops=%g,wiops=%g", &r, &wr); err != nil {
				t.Fatal(err)
			}
			sum += r + wr
		}
		if rest, ok := strings.CutPrefix(line, "cell: "); ok {
			f := strings.Fields(rest[strings.LastIndex(rest, "):")+2:])
			v, err := strconv.ParseFloat(strings.ReplaceAll(f[0], ",", ""), 64)
			testenv.Must(t, err)
			cell = v
		}
	}
	if sum == 0 || cell == 0 || sum > cell || sum < 0.99*cell {
		t.Errorf("caps add up to %.0f for a cell of %.0f IOPS:\n%s", sum, cell, w.stdout)
	}
}

// Malformed needs and workloads exit 2 with one line naming the field.
func TestFitBadInput(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	testenv.Must(t, os.WriteFile(bad, []byte("systems:\n  - {name: a, reads: 10, block_size: 4k}\n  - {name: b, reads: lots, block_size: 4k}\n"), 0o644))
	unknown := filepath.Join(t.TempDir(), "unknown.yaml")
	testenv.Must(t, os.WriteFile(unknown, []byte("systems:\n  - {name: a, reads: 10, block_size: 4k, iops: 3}\n"), 0o644))
	noBS := filepath.Join(t.TempDir(), "nobs.yaml")
	testenv.Must(t, os.WriteFile(noBS, []byte("systems:\n  - {name: a, reads: 10}\n  - {name: b, reads: 10, block_size: 4k}\n"), 0o644))
	file := func(name, yaml string) string {
		path := filepath.Join(t.TempDir(), name)
		testenv.Must(t, os.WriteFile(path, []byte(yaml), 0o644))
		return path
	}
	injected := file("injected.yaml", "systems:\n  - {name: a, reads: 10, block_size: \"4k,qd=3\"}\n")
	twoDocs := file("two.yaml", "systems:\n  - {name: a, reads: 10, block_size: 4k}\n---\nsystems:\n  - {name: b, reads: 1e9, block_size: 4k}\n")
	newline := file("newline.yaml", "systems:\n  - {name: \"a\\nFITS\", reads: 10, block_size: 4k}\n")
	target := filepath.Join(t.TempDir(), "target")
	doc := fleetDir + "node-a.json"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{doc, "--need", "read=abc,bs=4k"}, "read=abc"},
		{[]string{doc, "--need", "read=10,write=-1,bs=4k"}, "write=-1"},
		{[]string{doc, "--need", "read=10,bs=1000"}, "bs=1000"},
		{[]string{doc, "--need", "read=10"}, "bs: missing"},
		{[]string{doc, "--need", "bs=4k"}, "read"},
		{[]string{doc, "--need", "read=10,bs=4k,qd=0"}, "qd=0"},
		{[]string{doc, "--need", "read=10,bs=4k,iops=3"}, "iops=3"},
		{[]string{doc, "--need", "read=10,bs=4k,p98<2ms"}, "p98"},
		{[]string{doc, "--need", "read=10,bs=4k,p99<soon"}, "p99<soon"},
		{[]string{doc, "--need", "read=10,read=20,bs=4k"}, "twice"},
		{[]string{doc, "--need", "read=10,bs=64k"}, "64k"},
		{[]string{doc}, "--need or --workload"},
		{[]string{doc, "--need", "read=1,bs=4k", "--workload", bad}, "--need or --workload"},
		{[]string{doc, "--workload", bad}, `bad.yaml:3: "lots" is not a number`},
		{[]string{doc, "--workload", unknown}, "unknown.yaml:2: unknown field iops"},
		{[]string{doc, "--workload", noBS}, "nobs.yaml:2: system 1 (a): block_size: missing"},
		{[]string{doc, "--workload", injected}, "--workload " + injected + ":2: system 1 (a): block_size=4k,qd=3: not a block size"},
		{[]string{doc, "--workload", twoDocs}, "--workload " + twoDocs + ":3: a second YAML document"},
		{[]string{doc, "--workload", newline}, "--workload " + newline + `:2: system 1: name: "a\nFITS" holds a character that is not printable`},
		{[]string{doc, "--need", "read=NaN,bs=4k"}, "--need: read=NaN: not a number of IOPS"},
		{[]string{doc, "--need", "read=10,bs=4k,p99<1ms,p99<2ms"}, "--need: p99<2ms: a bound of p99 given twice"},
		{[]string{doc, "--workload", "testdata/fit/systems.yaml", "--rehearse", target, "--engine", "psync"}, "--engine: an open-loop run needs the uring engine"},
		{[]string{doc, "--need", "read=1,bs=4k", "--format", "xml"}, "--format"},
		{[]string{"nonexistent.json", "--need", "read=1,bs=4k"}, "nonexistent.json"},
		{[]string{doc, "--workload", "testdata/fit/systems.yaml", "--with-caps"}, "--with-caps: only applies with --rehearse"},
		{[]string{doc, "--workload", "testdata/fit/systems.yaml", "--runtime", "3s"}, "--runtime: only applies with --rehearse"},
		{[]string{doc, "--need", "read=1,bs=4k", "--rehearse", "/tmp/x"}, "--rehearse: rehearses a workload file's systems"},
		{[]string{doc, "--workload", "testdata/fit/systems.yaml", "--rehearse", "/tmp/x", "--arrival", "bursty"}, "--arrival"},
		{[]string{doc, "--workload", "testdata/fit/systems.yaml", "--rehearse", "/tmp/x", "--runtime", "0"}, "--runtime"},
		{[]string{doc, "--workload", "testdata/fit/systems.yaml", "--rehearse", "/tmp/x", "--engine", "aio"}, "--engine"},
		{[]string{doc, "--workload", "testdata/fit/systems.yaml", "--rehearse", "/tmp/x", "-o", "/nonexistent/dir/r.json"}, "--out"},
		{[]string{doc, "--workload", "testdata/fit/systems.yaml", "--rehearse", "/nonexistent/dir/target"}, "/nonexistent/dir"},
	} {
		r := runInProcess(append([]string{"fit"}, tc.args...)...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != exitUsage || len(lines) != 1 || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
			t.Errorf("fit %q: exit %d, stderr %q; want exit 2 and one line naming %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Errorf("a refused rehearsal laid out its target: %v", err)
	}
}
