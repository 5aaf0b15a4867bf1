package target

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/testenv"
)

// host is the running system, where the tests' targets are planned.
var host = sysfs.Default()

func TestLayoutAndReuse(t *testing.T) {
	testenv.Root(t)
	dir := testenv.DirectIODir(t)
	path := filepath.Join(dir, "t.dat")
	p, err := NewPlan(path, Options{Sys: host, Size: 8 << 20})
	if err != nil || p.Action != ActionCreate {
		t.Fatalf("plan new: %v %+v", err, p)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatal("planning created the file")
	}
	var last int64
	tg, err := p.Open(context.Background(), func(done, total int64) { last = done })
	if err != nil {
		t.Fatal(err)
	}
	_ = tg.Close()
	if last != 8<<20 {
		t.Errorf("layout progress ended at %d", last)
	}
	data, err := os.ReadFile(path)
	if err != nil || len(data) != 8<<20 {
		t.Fatalf("laid-out file: %d bytes, %v", len(data), err)
	}
	// Random data: no block repeats and no block is zero.
	seen := map[string]bool{}
	zero := make([]byte, 4096)
	for off := 0; off < len(data); off += 4096 {
		b := string(data[off : off+4096])
		if seen[b] || b == string(zero) {
			t.Fatalf("block at %d is zero or repeated", off)
		}
		seen[b] = true
	}
	if m, ok := readMarker(path); !ok || !m.complete || m.size != 8<<20 {
		t.Fatalf("marker %+v %v", m, ok)
	}
	if p, err := NewPlan(path, Options{Sys: host, Size: 8 << 20, Writes: true}); err != nil || p.Action != ActionReuse {
		t.Fatalf("second plan: %v %+v", err, p)
	}
	if p, err := NewPlan(path, Options{Sys: host, Size: 16 << 20, Writes: true}); err != nil || p.Action != ActionRelayout {
		t.Fatalf("plan at a new size: %v %+v", err, p)
	}
	// An interrupted layout leaves an incomplete marker: never reused.
	if err := unix.Setxattr(path, markerXattr, []byte(marker{size: 8 << 20}.String()), 0); err != nil {
		t.Fatal(err)
	}
	if p, err := NewPlan(path, Options{Sys: host, Size: 8 << 20}); err != nil || p.Action != ActionRelayout {
		t.Fatalf("plan of an unfinished layout: %v %+v", err, p)
	}
}

func TestLayoutCancelledRemovesFile(t *testing.T) {
	testenv.Root(t)
	path := filepath.Join(testenv.DirectIODir(t), "c.dat")
	p, err := NewPlan(path, Options{Sys: host, Size: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	_, err = p.Open(ctx, func(done, total int64) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatal("half-laid file left behind")
	}
}

func TestForeignFileGuard(t *testing.T) {
	testenv.Root(t)
	dir := testenv.DirectIODir(t)
	path := filepath.Join(dir, "precious")
	content := bytes.Repeat([]byte("keep me "), 8192)
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewPlan(path, Options{Sys: host, Size: 1 << 20, Writes: true}); !errors.Is(err, ErrNotOurs) {
		t.Errorf("write plan on a foreign file: %v", err)
	}
	if _, err := NewPlan(path, Options{Sys: host, Size: 1 << 20}); !errors.Is(err, ErrNotOurs) {
		t.Errorf("layout plan at an explicit size on a foreign file: %v", err)
	}
	// Reading in place is allowed and changes nothing.
	p, err := NewPlan(path, Options{Sys: host})
	if err != nil || p.Action != ActionReadOnly || p.Size != int64(len(content)) {
		t.Fatalf("read plan: %v %+v", err, p)
	}
	// (iotest's TestReadInPlaceChangesNothing runs patterns on it.)
	tg, err := p.Open(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if tg.Writable() {
		t.Error("a file read in place was opened for writing")
	}
	_ = tg.Close()
	got, _ := os.ReadFile(path)
	if !bytes.Equal(got, content) {
		t.Fatal("foreign file changed")
	}
	// --force lays it out.
	p, err = NewPlan(path, Options{Sys: host, Size: 1 << 20, Writes: true, Force: true})
	if err != nil || p.Action != ActionRelayout {
		t.Fatalf("forced plan: %v %+v", err, p)
	}
}

func TestBadTargets(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		path string
		opts Options
		want error
	}{
		{"missing parent", filepath.Join(dir, "no", "such", "x.dat"), Options{Sys: host, Size: 1 << 20}, ErrNoParent},
		{"no space", filepath.Join(dir, "huge.dat"), Options{Sys: host, Size: 1 << 60}, ErrNoSpace},
		{"directory", dir, Options{Sys: host, Size: 1 << 20}, ErrNotTarget},
		{"char device", "/dev/zero", Options{Sys: host}, ErrNotTarget},
	}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		cases = append(cases, struct {
			name string
			path string
			opts Options
			want error
		}{"tmpfs", "/dev/shm/iomatrix-test-" + t.Name(), Options{Sys: host, Size: 1 << 20}, ErrNoDirectIO})
	}
	for _, c := range cases {
		_, err := NewPlan(c.path, c.opts)
		if !errors.Is(err, c.want) || !errors.Is(err, ErrBadTarget) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
		}
		if c.want != ErrNotTarget {
			if _, err := os.Stat(c.path); !os.IsNotExist(err) {
				t.Errorf("%s: %s exists after a refused plan", c.name, c.path)
			}
		}
	}
}

func TestBlockDeviceGuards(t *testing.T) {
	dev, _ := testenv.DirectIOLoopDevice(t, 32<<20)
	if _, err := NewPlan(dev, Options{Sys: host, Writes: true}); !errors.Is(err, ErrDestructive) {
		t.Errorf("write without --allow-destructive: %v", err)
	}
	if p, err := NewPlan(dev, Options{Sys: host}); err != nil || p.Action != ActionDevice || p.Size != 32<<20 {
		t.Errorf("read plan: %v %+v", err, p)
	}
	mnt := testenv.MountExt4(t, dev)
	_, err := NewPlan(dev, Options{Sys: host, Writes: true, AllowDestructive: true})
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "mounted at "+mnt) {
		t.Errorf("write to a mounted device: %v", err)
	}
}

// Space that vanishes between the plan and the layout: the layout fails
// with ErrNoSpace and leaves no half-laid file that a later run would
// trust.
func TestLayoutENOSPCLeavesNothing(t *testing.T) {
	dev, _ := testenv.DirectIOLoopDevice(t, 48<<20)
	mnt := testenv.MountExt4(t, dev, "-m", "0")
	target := filepath.Join(mnt, "t.dat")
	p, err := NewPlan(target, Options{Sys: host, Size: 24 << 20})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	// Somebody else takes the space.
	hog := filepath.Join(mnt, "hog")
	var fs unix.Statfs_t
	testenv.Must(t, unix.Statfs(mnt, &fs))
	f, _ := os.Create(hog)
	testenv.Must(t, unix.Fallocate(int(f.Fd()), 0, 0, int64(fs.Bavail)*int64(fs.Bsize)-(8<<20)))
	f.Close()
	_, err = p.Open(context.Background(), nil)
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("layout on a full filesystem: %v", err)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatal("a half-laid file was left behind")
	}
	if _, err := os.Stat(sidecarPath(target)); !os.IsNotExist(err) {
		t.Fatal("a layout marker was left behind")
	}
}
