package testenv

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
)

// DiskFile is a read-only FUSE file of Size bytes, read with direct I/O
// (each read of the loop device reaches Read, not a cache). Embed it in a
// type that adds Read (fs.NodeReader) to decide what the device answers.
type DiskFile struct {
	fs.Inode
	Size int64
}

var (
	_ = (fs.NodeOpener)((*DiskFile)(nil))
	_ = (fs.NodeGetattrer)((*DiskFile)(nil))
)

func (d *DiskFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_DIRECT_IO, 0
}

func (d *DiskFile) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o444
	out.Size = uint64(d.Size)
	return 0
}

// FUSELoop serves file as the only file of a FUSE mount and attaches it
// read-only as a loop device: a block device whose every read is answered
// by file's Read method (see DiskFile), to stand in for a device that fails or stops
// answering. Both are gone when the test ends; a Read that blocks must be
// released first (by a cleanup registered after this call, which runs
// before these), or the loop device cannot detach. It needs root,
// /dev/fuse and losetup.
func FUSELoop(t testing.TB, file fs.InodeEmbedder) (dev string) {
	t.Helper()
	Root(t)
	_, err := os.Stat("/dev/fuse")
	Require(t, err == nil, "no /dev/fuse")
	losetup := Command(t, "losetup")
	mnt := t.TempDir()
	root := &fs.Inode{}
	server, err := fs.Mount(mnt, root, &fs.Options{
		MountOptions: fuse.MountOptions{DirectMount: true, AllowOther: true, FsName: "iomatrix-test"},
		OnAdd: func(ctx context.Context) {
			root.AddChild("disk.img", root.NewPersistentInode(ctx, file, fs.StableAttr{Mode: syscall.S_IFREG}), true)
		},
	})
	if err != nil {
		Require(t, false, "cannot mount FUSE: "+err.Error())
	}
	t.Cleanup(func() {
		if err := server.Unmount(); err != nil {
			t.Logf("unmount FUSE at %s: %v", mnt, err)
		}
	})
	out, err := exec.Command(losetup, "-f", "--show", "-r", filepath.Join(mnt, "disk.img")).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup: %v %s", err, out)
	}
	dev = strings.TrimSpace(string(out))
	t.Cleanup(func() { detach(t, losetup, dev) })
	return dev
}
