package target

import (
	"context"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/iomatrix/iomatrix/internal/testenv"
)

// zeroDisk is a FUSE file of zeros.
type zeroDisk struct{ testenv.DiskFile }

var _ = (fs.NodeReader)((*zeroDisk)(nil))

func (d *zeroDisk) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	clear(dest)
	return fuse.ReadResultData(dest[:max(0, min(int64(len(dest)), d.Size-off))]), 0
}

// A loop device over a FUSE file is served by the FUSE daemon, whose
// threads' wait for a CPU is then counted; a loop device over a file in
// memory is not.
func TestServedByFUSE(t *testing.T) {
	for _, c := range []struct {
		name string
		dev  string
		want bool
	}{
		{"fuse", testenv.FUSELoop(t, &zeroDisk{testenv.DiskFile{Size: 16 << 20}}), true},
		{"ram", testenv.RAMDisk(t, 16<<20), false},
	} {
		p, err := NewPlan(c.dev, Options{Sys: host})
		testenv.Must(t, err)
		tg, err := p.Open(context.Background(), nil)
		testenv.Must(t, err)
		if got := tg.ServedByFUSE(); got != c.want {
			t.Errorf("%s (%s): served by FUSE %v, want %v", c.name, c.dev, got, c.want)
		}
		testenv.Must(t, tg.Close())
	}
}
