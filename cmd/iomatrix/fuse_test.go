package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/iotest"
)

// flakyDisk is a FUSE file whose reads fail with EIO in [badFrom, size):
// a disk with a bad region, for the read-error path.
type flakyDisk struct {
	fs.Inode
	size, badFrom int64
}

var (
	_ = (fs.NodeOpener)((*flakyDisk)(nil))
	_ = (fs.NodeGetattrer)((*flakyDisk)(nil))
	_ = (fs.NodeReader)((*flakyDisk)(nil))
)

func (d *flakyDisk) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_DIRECT_IO, 0
}

func (d *flakyDisk) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o444
	out.Size = uint64(d.size)
	return 0
}

func (d *flakyDisk) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off+int64(len(dest)) > d.badFrom {
		return nil, syscall.EIO
	}
	end := min(off+int64(len(dest)), d.size)
	for i := range dest[:end-off] {
		dest[i] = byte(off + int64(i))
	}
	return fuse.ReadResultData(dest[:end-off]), 0
}

// flakyDevice is a read-only loop device over a FUSE file of size bytes
// whose reads fail with EIO from badFrom on: a disk with a bad region.
func flakyDevice(t *testing.T, size, badFrom int64) string {
	t.Helper()
	testenv.Root(t)
	_, err := os.Stat("/dev/fuse")
	testenv.Require(t, err == nil, "no /dev/fuse")
	losetup := testenv.Command(t, "losetup")
	mnt := t.TempDir()
	root := &fs.Inode{}
	disk := &flakyDisk{size: size, badFrom: badFrom}
	server, err := fs.Mount(mnt, root, &fs.Options{
		MountOptions: fuse.MountOptions{DirectMount: true, AllowOther: true, FsName: "iomatrix-flaky"},
		OnAdd: func(ctx context.Context) {
			root.AddChild("disk.img", root.NewPersistentInode(ctx, disk, fs.StableAttr{Mode: syscall.S_IFREG}), true)
		},
	})
	testenv.Require(t, err == nil, "cannot mount FUSE: "+errString(err))
	t.Cleanup(func() { server.Unmount() })
	out, err := exec.Command(losetup, "-f", "--show", "-r", filepath.Join(mnt, "disk.img")).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup: %v %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command(losetup, "-d", dev).Run() })
	return dev
}

// A read error (EIO) in the middle of a run: a loop device over a FUSE
// file that fails reads in its upper half.
func TestReadErrorEIO(t *testing.T) {
	disk := &flakyDisk{size: 64 << 20, badFrom: 32 << 20}
	dev := flakyDevice(t, disk.size, disk.badFrom)

	results := filepath.Join(t.TempDir(), "r.json")
	r := runIomatrix(t, iomatrixCmd(t, "run", dev, "--rw", "randread", "--bs", "4k", "--qd", "4", "--runtime", "10s", "--ramp", "0s", "--format", "json", "-o", results))
	if r.code != exitFailure {
		t.Fatalf("exit %d, want 1: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	// Under --format json the error is one JSON object naming both.
	if last := lines[len(lines)-1]; !strings.Contains(last, dev) || !strings.Contains(last, "input/output error") {
		t.Errorf("last stderr line %q does not name the device and the error", last)
	}
	doc, err := iotest.ReadDocumentFile(results)
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

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
