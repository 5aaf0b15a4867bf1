package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

func TestImportThenReportAndCompare(t *testing.T) {
	dir := t.TempDir()
	fx := func(n string) string { return filepath.Join("..", "..", "iotest", "fio", "testdata", n) }
	out := filepath.Join(dir, "fio.json")
	r := runInProcess("import", fx("stonewall.json"), fx("trim.json"), fx("randrw70.json"), "-o", out)
	if r.code != 0 {
		t.Fatalf("import: exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, `fio job "trim"`) || !strings.Contains(r.stderr, "4 results") {
		t.Errorf("import stderr %q: want the unmapped job named and the count", r.stderr)
	}
	doc, err := results.ReadDocumentFile(out)
	if err != nil || len(doc.Results) != 4 {
		t.Fatalf("imported document: %v", err)
	}
	if r := runInProcess("report", out, "--format", "markdown"); r.code != 0 || !strings.Contains(r.stdout, "| 70% read |") {
		t.Errorf("report of imported data: %d %q %q", r.code, r.stdout, r.stderr)
	}
	if r := runInProcess("compare", out, out); r.code != 0 || !strings.Contains(r.stdout, "4 patterns compared") {
		t.Errorf("compare of imported data: %q %q", r.stdout, r.stderr)
	}
	// Bad input: not fio, not JSON, a missing file.
	notJSON := filepath.Join(dir, "x.json")
	testenv.Must(t, os.WriteFile(notJSON, []byte("hello"), 0o644))
	for _, args := range [][]string{
		{"import", "../../report/testdata/capped.json"},
		{"import", notJSON},
		{"import", filepath.Join(dir, "missing.json")},
		{"import"},
	} {
		checkRefused(t, runInProcess(args...), "")
	}
}

// fio output with a figure fio never reports is refused on one line
// naming the file, and nothing is written.
func TestImportRefusesNegativeIOPS(t *testing.T) {
	data, err := os.ReadFile("../../iotest/fio/testdata/randread.json")
	testenv.Must(t, err)
	i := bytes.Index(data, []byte(`"iops" : `))
	if i < 0 {
		t.Fatal("no iops in the fixture")
	}
	bad := filepath.Join(t.TempDir(), "neg.json")
	testenv.Must(t, os.WriteFile(bad, append(append(append([]byte(nil), data[:i]...), `"iops" : -`...), data[i+len(`"iops" : `):]...), 0o644))
	out := filepath.Join(t.TempDir(), "out.json")
	checkRefused(t, runInProcess("import", bad, "-o", out), bad+`: fio job "randread": read iops is -`)
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s written: %v", out, err)
	}
}
