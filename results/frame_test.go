package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func frameFixture(t *testing.T) *Document {
	t.Helper()
	d, err := ReadDocumentFile("../report/testdata/fleet/node-a.json")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A document framed among other log lines, with timestamps before the
// frames and a progress frame, reads back equal, whatever the lines
// around it.
func TestFramesSurviveASharedLog(t *testing.T) {
	d := frameFixture(t)
	var frames bytes.Buffer
	if err := WriteProgressFrame(&frames, FrameProgress{Done: 3, Total: 9, Pattern: "rand-4k-r100-qd1", IOPS: 1234.5}); err != nil {
		t.Fatal(err)
	}
	if err := WriteDocumentFrames(&frames, d); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(frames.String(), "\n"), "\n")
	if len(lines) < 4 {
		t.Fatalf("%d frame lines for a %d-result document; want it split in chunks", len(lines), len(d.Results))
	}
	var log bytes.Buffer
	log.WriteString("iomatrix: sweep quick: 9 of 9 patterns to run\n{\"not\": \"a document\"}\n")
	for i, l := range lines {
		if len(l) > 8192 {
			t.Fatalf("frame line of %d bytes", len(l))
		}
		// stderr lines between the frames, and kubectl's --timestamps prefix
		log.WriteString("2026-11-30T10:00:00.000000000Z " + l + "\n")
		if i%2 == 0 {
			log.WriteString("[4/9] rand-4k-r100-qd8: 9,999 IOPS\n")
		}
	}
	got, err := ReadFrames(&log)
	if err != nil {
		t.Fatal(err)
	}
	if got.Progress == nil || *got.Progress != (FrameProgress{Done: 3, Total: 9, Pattern: "rand-4k-r100-qd1", IOPS: 1234.5}) {
		t.Errorf("progress %+v", got.Progress)
	}
	want, _ := json.Marshal(d)
	have, _ := json.Marshal(got.Document)
	if !bytes.Equal(want, have) {
		t.Error("the document read from the frames differs from the one written")
	}
}

// Damage is reported, never decoded into a wrong document: a lost chunk,
// a changed byte, a log cut before the end; the last complete document
// wins over an earlier one.
func TestFramesDamage(t *testing.T) {
	d := frameFixture(t)
	var buf bytes.Buffer
	if err := WriteDocumentFrames(&buf, d); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(buf.String(), "\n"), "\n")
	join := func(ls ...string) string { return strings.Join(ls, "") }
	last := len(lines) - 1
	changed := strings.Replace(lines[1], "A", "B", 1)
	if changed == lines[1] {
		changed = strings.Replace(lines[1], "e", "f", 1)
	}
	for name, log := range map[string]string{
		"lost chunk":     join(append([]string{lines[0]}, lines[2:]...)...),
		"changed byte":   join(append(append([]string{lines[0], changed}, lines[2:last]...), lines[last])...),
		"cut before end": join(lines[:last]...),
		"swapped chunks": join(append([]string{lines[1], lines[0]}, lines[2:]...)...),
	} {
		f, err := ReadFrames(strings.NewReader(log))
		if err == nil || errors.Is(err, ErrNoFrames) || f.Document != nil {
			t.Errorf("%s: err %v, document %v; want a damage error and no document", name, err, f.Document != nil)
		}
	}
	if _, err := ReadFrames(strings.NewReader("just a log\n")); !errors.Is(err, ErrNoFrames) {
		t.Errorf("a log without frames: %v, want ErrNoFrames", err)
	}
	// A damaged first attempt followed by a complete one: the complete one.
	f, err := ReadFrames(strings.NewReader(join(lines[:last]...) + buf.String()))
	if err != nil || f.Document == nil || !reflect.DeepEqual(f.Document.Host, d.Host) {
		t.Errorf("cut document then a whole one: err %v", err)
	}
}
