package trace

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/fault"
)

func read(t *testing.T, in string, o Options) *Trace {
	t.Helper()
	tr, err := Read(strings.NewReader(in), o)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return tr
}

func TestIologV3(t *testing.T) {
	in := "fio version 3 iolog\n20 /dev/loop0 add\n3064 /dev/loop0 open\n3069 /dev/loop0 read 16187392 4096\n" +
		"3123 /dev/loop0 write 198717440 8192\n5000 /dev/loop0 sync 0 0\n6000 /dev/loop0 trim 0 4096\n6429 /dev/loop0 read 226336768 4096\n7000 /dev/loop0 close\n"
	tr := read(t, in, Options{})
	want := []IO{{0, 16187392, 4096, false}, {54000, 198717440, 8192, true}, {3360000, 226336768, 4096, false}}
	if tr.Format != FormatIolog3 || tr.Device != "/dev/loop0" || !reflect.DeepEqual(tr.IOs, want) || tr.Untimed {
		t.Fatalf("got %+v", tr)
	}
	if tr.Skipped != (Skipped{Flushes: 1, Discards: 1}) {
		t.Errorf("skipped %+v", tr.Skipped)
	}
}

func TestIologV2Waits(t *testing.T) {
	in := "fio version 2 iolog\n/f add\n/f open\n/f read 0 4096\n/f wait 1000\n/f write 4096 4096\n/f wait 50 0\n/f read 8192 512\n/f wait 2000 0\n/f read 0 0\n/f read 0 4096\n"
	tr := read(t, in, Options{})
	want := []IO{{0, 0, 4096, false}, {1e6, 4096, 4096, true}, {1e6, 8192, 512, false}, {3e6, 0, 4096, false}}
	if tr.Format != FormatIolog2 || !reflect.DeepEqual(tr.IOs, want) || tr.Untimed || tr.Skipped.Empty != 1 {
		t.Fatalf("got %+v", tr)
	}
	if tr := read(t, "fio version 2 iolog\n/f read 0 4096\n/f read 4096 4096\n", Options{}); !tr.Untimed {
		t.Error("a version 2 log without waits has no times")
	}
}

func TestIologRealFile(t *testing.T) {
	tr, err := ReadFile("testdata/fio.iolog3", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.IOs) != 17 || tr.IOs[0].At != 0 || tr.IOs[16].At != (33706-3069)*1000 {
		t.Fatalf("%d I/Os, %+v", len(tr.IOs), tr.IOs)
	}
}

func TestBadInput(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"fio version 3 iolog\n1 /f read 0 4096\nx /f read 0 1\n", "line 3: \"x\" is not a timestamp"},
		{"fio version 2 iolog\n/f read 0\n", "line 2: read needs an offset and a length"},
		{"fio version 2 iolog\n/f copy 0 1\n", "line 2: \"copy\" is not an action"},
		{"fio version 3 iolog\n1 /f wait 10\n", "line 2: version 3 has no wait"},
		{"fio version 2 iolog\n/f read -1 4096\n", "line 2: offset \"-1\""},
		{"  7,0    0        0     0.000000000 20545  Q  RS 0 + 8 [dd]\ngarbage here\n", "line 2: \"garbage here\" is not a blkparse event"},
		{"  7,0    0        0     0.0x 20545  Q  RS 0 + 8 [dd]\n", "line 1: \"0.0x\" is not a time"},
		{"  7,0    0        0     0.1 20545  Q  XY 0 + 8 [dd]\n", "line 1: \"XY\" is not blkparse's RWBS"},
		{"hello\n", "not a trace"},
	} {
		_, err := Read(strings.NewReader(c.in), Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.in, err, c.want)
		}
	}
}

func TestDevices(t *testing.T) {
	in := "fio version 2 iolog\n/a read 0 4096\n/b write 0 4096\n/a read 4096 4096\n"
	var many *DevicesError
	if _, err := Read(strings.NewReader(in), Options{}); !errors.As(err, &many) || !reflect.DeepEqual(many.Devices, []string{"/a", "/b"}) {
		t.Fatalf("two files without a choice: %v", err)
	}
	if tr := read(t, in, Options{Device: "/a"}); len(tr.IOs) != 2 || tr.Writes() {
		t.Errorf("filtered: %+v", tr)
	}
	var none *NoDeviceError
	if _, err := Read(strings.NewReader(in), Options{Device: "/c"}); !errors.As(err, &none) {
		t.Errorf("absent device: %v", err)
	}
}

func TestBlkparseText(t *testing.T) {
	tr, err := ReadFile("testdata/loop0.blkparse", Options{Device: "7,0"})
	if err != nil {
		t.Fatal(err)
	}
	checkLoop0(t, tr, FormatBlkparse)
	in := "  8,0 1 1 0.5 1 Q FWS [jbd2]\n  8,0 1 2 0.6 1 Q WFS 8 + 8 [x]\n  8,0 1 3 0.7 1 Q FWS 16 + 8 [x]\n  8,0 1 4 0.8 1 Q D 0 + 2048 [x]\n  8,0 1 5 0.9 1 Q N [x]\n"
	tr = read(t, in, Options{})
	if len(tr.IOs) != 2 || tr.Skipped != (Skipped{Flushes: 2, Discards: 1, Empty: 1}) || tr.Device != "8:0" {
		t.Errorf("flags: %+v", tr)
	}
}

// checkLoop0 holds a trace to what testdata's loop0 trace holds: three
// 4 KiB reads, then two 8 KiB writes.
func checkLoop0(t *testing.T, tr *Trace, format string) {
	t.Helper()
	want := []IO{{0, 0, 4096, false}, {101811, 4096, 4096, false}, {155812, 8192, 4096, false},
		{2153290, 81920, 8192, true}, {2239599, 90112, 8192, true}}
	if tr.Format != format || tr.Device != "7:0" || !reflect.DeepEqual(tr.IOs, want) || tr.Skipped.Total() != 0 {
		t.Fatalf("got %+v", tr)
	}
}

func TestBlktraceBinary(t *testing.T) {
	tr, err := ReadFile("testdata/loop0.blktrace.0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	checkLoop0(t, tr, FormatBlktrace)
}

// record is one blk_io_trace in order, with its payload.
func record(order binary.ByteOrder, time, sector uint64, bytes, action, dev uint32, pdu []byte) []byte {
	b := make([]byte, blkRecord, blkRecord+len(pdu))
	order.PutUint32(b[0:], blkMagic|blkVersion)
	order.PutUint64(b[8:], time)
	order.PutUint64(b[16:], sector)
	order.PutUint32(b[24:], bytes)
	order.PutUint32(b[28:], action)
	order.PutUint32(b[36:], dev)
	order.PutUint16(b[46:], uint16(len(pdu)))
	return append(b, pdu...)
}

func TestBlktraceRecords(t *testing.T) {
	q := func(cat uint32) uint32 { return blkQueue | (cat|1<<4)<<tcShift }
	dev := uint32(8<<minorBits | 16)
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		var cpu0, cpu1 bytes.Buffer
		cpu0.Write(record(order, 100, 0, 0, tcNotify<<tcShift, dev, []byte("fio\x00")))      // process name
		cpu0.Write(record(order, 1000, 8, 4096, q(tcWrite), dev, nil))                       // a write
		cpu0.Write(record(order, 1500, 8, 4096, 7|(tcWrite|1<<6)<<tcShift, dev, nil))        // its dispatch: not an I/O
		cpu1.Write(record(order, 1200, 16, 8192, q(tcRead)|blkCgroup, dev, make([]byte, 8))) // a read, from a cgroup
		cpu1.Write(record(order, 1300, 0, 0, q(tcWrite|tcFlush), dev, nil))                  // a flush
		cpu1.Write(record(order, 1400, 0, 1<<20, q(tcWrite|tcDiscard), dev, nil))            // a discard
		cpu1.Write(record(order, 1600, 32, 4096, q(tcWrite|tcFlush), dev, nil))              // a write after a flush
		tr, err := ReadBlktrace([]io.Reader{&cpu0, &cpu1}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := []IO{{0, 4096, 4096, true}, {200, 8192, 8192, false}, {600, 16384, 4096, true}}
		if !reflect.DeepEqual(tr.IOs, want) || tr.Device != "8:16" || tr.Skipped != (Skipped{Flushes: 2, Discards: 1}) {
			t.Errorf("%v: got %+v", order, tr)
		}
	}
}

func TestBlktraceBad(t *testing.T) {
	good := record(binary.LittleEndian, 1, 0, 4096, blkQueue|(tcRead|1<<4)<<tcShift, 7<<minorBits, nil)
	bad := append([]byte{}, good...)
	bad[0] = 0x06 // version 6
	for _, c := range []struct {
		in   []byte
		want string
	}{
		{append(append([]byte{}, good...), good[:20]...), "record 2 (byte 48): cut short: 20 of 48 bytes"},
		{append(append([]byte{}, good...), bad...), "record 2 (byte 48): blktrace version 6"},
		{append(append([]byte{}, good...), make([]byte, 48)...), "record 2 (byte 48): no blktrace magic"},
		{record(binary.LittleEndian, 1, 0, 4096, 0, 0, []byte{1, 2})[:49], "record 1 (byte 0): payload of 2 bytes cut short"},
	} {
		_, err := Read(bytes.NewReader(c.in), Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

func TestReadFileNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	rec := record(binary.LittleEndian, 1, 0, 4096, blkQueue|(tcRead|1<<4)<<tcShift, 7<<minorBits, nil)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p0 := write("sda.blktrace.0", rec)
	p1 := write("sda.blktrace.1", append(append([]byte{}, rec...), 1, 2, 3))
	write("sdb.blktrace.0", rec)
	if files, err := Files(p0); err != nil || !reflect.DeepEqual(files, []string{p0, p1}) {
		t.Fatalf("files %v %v", files, err)
	}
	_, err := ReadFile(p0, Options{})
	if !errors.As(err, new(*fault.InputError)) || err.Error() != p1+": record 2 (byte 48): cut short: 3 of 48 bytes" {
		t.Errorf("got %v", err)
	}
	iolog := write("x.log", []byte("fio version 2 iolog\n/f read 0 4096\n/f read 1\n"))
	if _, err := ReadFile(iolog, Options{}); err == nil || err.Error() != iolog+":3: read needs an offset and a length" {
		t.Errorf("got %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "none"), Options{}); !errors.As(err, new(*fault.InputError)) {
		t.Errorf("a missing file: %v", err)
	}
}

func TestPerSecond(t *testing.T) {
	tr := &Trace{IOs: []IO{{At: 0}, {At: 5e8}, {At: 1e9}, {At: 25e8}, {At: 3e9 - 1}}}
	if got := tr.PerSecond(1); !reflect.DeepEqual(got, []uint64{2, 1, 2}) {
		t.Errorf("speed 1: %v", got)
	}
	if got := tr.PerSecond(2); !reflect.DeepEqual(got, []uint64{3, 2}) {
		t.Errorf("speed 2: %v", got)
	}
}
