package target

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/testenv"
)

// A virtual filesystem is named as mount(8) names it, not by its magic.
func TestVirtualFilesystemNamed(t *testing.T) {
	_, err := NewPlan("/proc/version", Options{Sys: host})
	if !errors.Is(err, ErrNotTarget) {
		t.Fatalf("error %v, want ErrNotTarget", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "proc is a virtual filesystem") || strings.Contains(msg, "0x") {
		t.Errorf("error %q does not name proc", msg)
	}
}

// freeBlockMajor is a block major without a driver on this machine, from
// the kernel's range for local and experimental use (240-254), which no
// distribution's driver takes.
func freeBlockMajor(t *testing.T) uint32 {
	t.Helper()
	devices, err := os.ReadFile("/proc/devices")
	testenv.Must(t, err)
	_, block, _ := strings.Cut(string(devices), "Block devices:")
	for major := uint32(240); major <= 254; major++ {
		if !strings.Contains(block, fmt.Sprintf("\n%3d ", major)) {
			return major
		}
	}
	testenv.Require(t, false, "every block major from 240 to 254 has a driver on this machine")
	return 0
}

// A device node that cannot be opened is named once: the open's own error
// already carries the path.
func TestUnopenableDeviceNamedOnce(t *testing.T) {
	testenv.Root(t)
	major := freeBlockMajor(t)
	node := filepath.Join(t.TempDir(), "nodriver")
	if err := unix.Mknod(node, unix.S_IFBLK|0o600, int(unix.Mkdev(major, 0))); err != nil {
		testenv.Require(t, false, "mknod: "+err.Error())
	}
	_, err := NewPlan(node, Options{Sys: host})
	if err == nil {
		t.Fatal("a device without a driver was accepted")
	}
	if n := strings.Count(err.Error(), node); n != 1 {
		t.Errorf("error %q names %s %d times, want once", err, node, n)
	}
}
