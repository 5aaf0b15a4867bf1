package fit

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/results"
)

// A workload that fits gets each system's share as caps on the measured
// device (a fleet's first member's), in the three spellings; one that
// does not fit lists the systems without caps, and says why.
func TestAnswerCapsOnTheMeasuredDevice(t *testing.T) {
	w, err := ParseWorkload("w.yaml", []byte("systems:\n  - {name: a, reads: 300, writes: 100, block_size: 4k}\n  - {name: b, reads: 100, block_size: 4k}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cells := []results.Result{fitCell(4096, 50, 1, 1000, 100), fitCell(4096, 100, 1, 2000, 100)}
	fleet := &results.Document{Members: []results.Member{
		{Label: "x", Target: results.TargetInfo{Device: "8:16"}, Results: cells},
		{Label: "y", Target: results.TargetInfo{Device: "8:32"}, Results: cells},
	}}
	v, err := Judge(fleet, w.Sum())
	if err != nil || !v.Fits {
		t.Fatalf("fits %v (%s), err %v", v.Fits, v.Why, err)
	}
	a := NewAnswer(fleet, v, &w)
	if len(a.Systems) != 2 {
		t.Fatalf("systems %+v", a.Systems)
	}
	// 80 % reads: the 50 % row, 1,000 IOPS for 500 needed: each direction
	// its need and a quarter of the 500 left.
	s := a.Systems[0]
	if s.Cap != "riops=425,wiops=225" || s.IOMax != "8:16 rbps=max wbps=max riops=425 wiops=225" ||
		!slices.Equal(s.Blkio, []string{"blkio.throttle.read_iops_device: 8:16 425", "blkio.throttle.write_iops_device: 8:16 225"}) {
		t.Errorf("system a: %+v", s)
	}
	if a.Systems[1].Cap != "riops=225,wiops=125" {
		t.Errorf("system b: %+v", a.Systems[1])
	}
	var text bytes.Buffer
	if err := WriteText(&text, v, a); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"FITS: 400 reads + 100 writes = 500 IOPS (80 % reads) at 4k\n", "of member x (the fleet's worst)",
		"headroom: +100.0 %\n", "\nsystems:\n  a: 300 reads/s, 100 writes/s\n    --cap riops=425,wiops=225\n    io.max: 8:16 "} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}

	big := w
	big.Systems = slices.Clone(w.Systems)
	big.Systems[0].ReadIOPS = 3000
	v, err = Judge(fleet, big.Sum())
	if err != nil || v.Fits {
		t.Fatalf("fits %v, err %v: 3,200 IOPS on a 2,000 IOPS cell", v.Fits, err)
	}
	a = NewAnswer(fleet, v, &big)
	var js bytes.Buffer
	if err := a.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back["fits"] != false || back["why"] == "" || strings.Contains(js.String(), `"cap"`) || len(back["systems"].([]any)) != 2 {
		t.Errorf("does not fit, yet:\n%s", js.String())
	}
}

// An answer fails by the lookup's verdict, or by the rehearsal's when it
// has one: its first system that does not fit.
func TestAnswerFailure(t *testing.T) {
	for _, c := range []struct {
		a    Answer
		want string
	}{
		{Answer{Fits: true}, ""},
		{Answer{Why: "the cell is short"}, "does not fit: the cell is short"},
		{Answer{Rehearsal: &results.Rehearsal{Systems: []results.RehearsedSystem{{Name: "a", Fits: true}}}}, ""},
		{Answer{Fits: true, Rehearsal: &results.Rehearsal{Systems: []results.RehearsedSystem{{Name: "a", Fits: true},
			{Name: "b", Why: "rate not sustained"}, {Name: "c", Why: "p99 too high"}}}}, "does not fit, by the rehearsal: b: rate not sustained"},
	} {
		err := c.a.Failure()
		if (err == nil) != (c.want == "") || err != nil && err.Error() != c.want {
			t.Errorf("%+v: %v, want %q", c.a, err, c.want)
		}
	}
}

// Write gives the answer as one JSON document, or as text followed by
// the rehearsal's document when there is one.
func TestWrite(t *testing.T) {
	doc := &results.Document{Results: []results.Result{fitCell(4096, 100, 1, 1000, 100)}}
	n, _ := ParseNeed("read=100,bs=4k")
	v, err := Judge(doc, n)
	if err != nil {
		t.Fatal(err)
	}
	a := NewAnswer(doc, v, nil)
	var plain bytes.Buffer
	if err := Write(&plain, "text", v, a, nil); err != nil || !strings.HasPrefix(plain.String(), "FITS: 100 reads") {
		t.Errorf("text: %v\n%s", err, plain.String())
	}
	reh := &results.Document{Rehearsal: &results.Rehearsal{Fits: true, LookupFits: true, Systems: []results.RehearsedSystem{{Name: "a", Fits: true}}}}
	a.Rehearsal = reh.Rehearsal
	var text bytes.Buffer
	if err := Write(&text, "text", v, a, reh); err != nil || !strings.HasPrefix(text.String(), plain.String()+"\nrehearsal of 1 system at once") ||
		!strings.HasSuffix(text.String(), "rehearsal: FITS (the lookup agrees)\n") {
		t.Errorf("text with a rehearsal: %v\n%s", err, text.String())
	}
	var js bytes.Buffer
	var back Answer
	if err := Write(&js, "json", v, a, reh); err != nil || json.Unmarshal(js.Bytes(), &back) != nil || !back.Fits || back.Rehearsal == nil {
		t.Errorf("json: %v\n%s", err, js.String())
	}
}
