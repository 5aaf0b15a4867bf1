package trace

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"
)

// FuzzRead: any input is read or refused, never a panic, and what is
// read holds together.
func FuzzRead(f *testing.F) {
	for _, name := range []string{"testdata/fio.iolog3", "testdata/loop0.blkparse", "testdata/loop0.blktrace.0"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("fio version 2 iolog\n/f read 0 4096\n/f wait 1000\n/f write 4096 512\n"))
	f.Add(record(binary.BigEndian, 5, 1, 512, blkQueue|(tcWrite|tcFlush)<<tcShift, 3, []byte("x")))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := Read(bytes.NewReader(data), Options{})
		if err != nil {
			return
		}
		for i, io := range tr.IOs {
			if io.Size <= 0 || io.Offset < 0 || io.At < 0 || (i > 0 && io.At < tr.IOs[i-1].At) {
				t.Fatalf("I/O %d: %+v", i, io)
			}
		}
		if len(tr.IOs) > 0 && tr.IOs[0].At != 0 {
			t.Fatalf("the first I/O starts at %d", tr.IOs[0].At)
		}
	})
}
