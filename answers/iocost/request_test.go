package iocost

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

// What apply, show and reset did, as their text says it: nothing when
// they stopped before doing anything.
func TestRequestResultsText(t *testing.T) {
	for _, w := range []func(*bytes.Buffer) error{
		func(b *bytes.Buffer) error { return ApplyResult{}.WriteText(b) },
		func(b *bytes.Buffer) error { return ShowResult{}.WriteText(b) },
		func(b *bytes.Buffer) error { return ResetResult{}.WriteText(b) },
	} {
		var b bytes.Buffer
		if err := w(&b); err != nil || b.Len() != 0 {
			t.Errorf("a result of nothing done prints %q (%v)", b.String(), err)
		}
	}
	var b bytes.Buffer
	a := ApplyResult{Model: "1:2 m", QoS: "1:2 q", ReadBack: &Applied{Model: "1:2 M", QoS: "1:2 Q"}}
	if err := a.WriteText(&b); err != nil || b.String() != "io.cost.model: 1:2 m\nio.cost.qos:   1:2 q\nread back:\n  1:2 M\n  1:2 Q\n" {
		t.Errorf("apply: %q (%v)", b.String(), err)
	}
	b.Reset()
	s := ShowResult{Dev: "1:2", QoS: "1:2 q", StateFile: "/st.json", Saved: &State{SavedAt: "then", QoS: "1:2 Q"}}
	want := "io.cost.model: (none: iocost was never set up on the device)\nio.cost.qos:   1:2 q\n" +
		"saved by iocost apply at then (/st.json), restored by iocost reset:\n  (none: iocost was never set up on the device)\n  1:2 Q\n"
	if err := s.WriteText(&b); err != nil || b.String() != want {
		t.Errorf("show: %q (%v)", b.String(), err)
	}
}

// apply, show and reset on a cgroup2 root of plain files: bad input named
// by its option, a dry run that writes nothing, an apply read back that
// keeps the lines before, and a reset that puts them back.
func TestApplyShowReset(t *testing.T) {
	testenv.Root(t)
	dir, root := t.TempDir(), t.TempDir()
	for name, data := range map[string]string{"cgroup.controllers": "cpu io memory\n", ModelFile: "", QoSFile: ""} {
		testenv.Must(t, os.WriteFile(filepath.Join(root, name), []byte(data), 0o644))
	}
	h, dev, _, err := Resolve(sysfs.Default(), root, dir, "")
	testenv.Require(t, err == nil && h.Check(dev) == nil, "the temp dir is on no blk-mq disk")
	doc := modelDoc()
	doc.Target.Device = dev
	from := filepath.Join(dir, "sweep.json")
	testenv.Must(t, results.WriteFileAtomic(from, doc))
	req := Request{Sys: sysfs.Default(), CgroupRoot: root, Device: dir, State: filepath.Join(dir, "state.json")}

	var ie *fault.InputError
	if _, err := (ApplyRequest{Request: req}).Apply(); !errors.As(err, &ie) || ie.Option != "from" {
		t.Errorf("no results files: %v", err)
	}
	doc.Target.Device = "1:2"
	other := filepath.Join(dir, "other.json")
	testenv.Must(t, results.WriteFileAtomic(other, doc))
	var m *fault.Mention
	if _, err := (ApplyRequest{Request: req, From: []string{other}, Vrate: "face"}).Apply(); !errors.As(err, &ie) || !errors.As(err, &m) ||
		m.Text(func(o string) string { return "--" + o }) != "--from "+other+": measured device 1:2, not "+dev+" ("+dir+")" {
		t.Errorf("another device's results: %v", err)
	}

	a, err := ApplyRequest{Request: req, From: []string{from}, Vrate: "face", DryRun: true}.Apply()
	if err != nil || a.Model != mustDerive(t, doc).Model.Line(dev) || a.QoS != AutoQoSLine(dev)+" (no QoS derived: the kernel's own)" || a.ReadBack != nil || len(a.Notes) != 0 {
		t.Errorf("dry run: %+v, %v", a, err)
	}
	if _, err := os.Stat(req.State); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a dry run saved the state (%v)", err)
	}
	a, err = ApplyRequest{Request: req, From: []string{from}, Vrate: "face"}.Apply()
	if err != nil || a.ReadBack == nil || a.ReadBack.Model != strings.TrimSpace(readFile(t, root, ModelFile)) || len(a.Notes) != 1 || !strings.Contains(a.Notes[0], "saved in "+req.State) {
		t.Fatalf("apply: %+v, %v", a, err)
	}
	s, err := req.Show()
	if err != nil || s.Model != a.ReadBack.Model || s.Saved == nil || s.Saved.Model != "" || s.StateFile != req.State {
		t.Errorf("show: %+v, %v", s, err)
	}
	r, err := req.Reset()
	if err != nil || r.Model != dev+" ctrl=auto" || r.QoS != dev+" enable=0 ctrl=auto" || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "listed no line") {
		t.Errorf("reset: %+v, %v", r, err)
	}
	if _, err := os.Stat(req.State); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("reset left the state (%v)", err)
	}
}

func mustDerive(t *testing.T, doc *results.Document) Derived {
	t.Helper()
	d, err := Derive([]*results.Document{doc})
	testenv.Must(t, err)
	return d
}

func readFile(t *testing.T, dir, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	testenv.Must(t, err)
	return string(data)
}
