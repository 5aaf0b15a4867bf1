package main

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

// flakyDisk is a FUSE file whose reads fail with EIO in [badFrom, Size):
// a disk with a bad region, for the read-error path.
type flakyDisk struct {
	testenv.DiskFile
	badFrom int64
}

var _ = (fs.NodeReader)((*flakyDisk)(nil))

func (d *flakyDisk) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off+int64(len(dest)) > d.badFrom {
		return nil, syscall.EIO
	}
	end := min(off+int64(len(dest)), d.Size)
	for i := range dest[:end-off] {
		dest[i] = byte(off + int64(i))
	}
	return fuse.ReadResultData(dest[:end-off]), 0
}

// flakyDevice is a read-only loop device of size bytes whose reads fail
// with EIO from badFrom on.
func flakyDevice(t *testing.T, size, badFrom int64) string {
	t.Helper()
	return testenv.FUSELoop(t, &flakyDisk{DiskFile: testenv.DiskFile{Size: size}, badFrom: badFrom})
}

// A read error (EIO) in the middle of a run: a loop device over a FUSE
// file that fails reads in its upper half.
func TestReadErrorEIO(t *testing.T) {
	disk := &flakyDisk{DiskFile: testenv.DiskFile{Size: 64 << 20}, badFrom: 32 << 20}
	dev := testenv.FUSELoop(t, disk)

	resultsFile := filepath.Join(t.TempDir(), "r.json")
	r := runIomatrix(t, iomatrixCmd(t, "run", dev, "--rw", "randread", "--bs", "4k", "--qd", "4", "--runtime", "10s", "--ramp", "0s", "--format", "json", "-o", resultsFile))
	if r.code != exitFailure {
		t.Fatalf("exit %d, want 1: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	// Under --format json the error is one JSON object naming both.
	if last := lines[len(lines)-1]; !strings.Contains(last, dev) || !strings.Contains(last, "input/output error") {
		t.Errorf("last stderr line %q does not name the device and the error", last)
	}
	doc, err := results.ReadDocumentFile(resultsFile)
	if err != nil || len(doc.Results) != 1 {
		t.Fatalf("results: %v", err)
	}
	e := doc.Results[0].Error
	if e == nil || e.Op != "read" || e.Errno != int(syscall.EIO) || e.Offset < disk.badFrom {
		t.Fatalf("recorded error %+v", e)
	}
	res := doc.Results[0]
	if res.Failed.Reads == 0 || res.Submitted.Reads != res.Completed.Reads+res.Failed.Reads {
		t.Errorf("submitted %+v, completed %+v, failed %+v: an I/O was lost", res.Submitted, res.Completed, res.Failed)
	}
	t.Logf("stopped on %s; %d reads completed before", e, doc.Results[0].Completed.Reads)
}
