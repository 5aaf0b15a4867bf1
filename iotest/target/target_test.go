package target

import (
	"errors"
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

// A device node that cannot be opened is named once: the open's own error
// already carries the path.
func TestUnopenableDeviceNamedOnce(t *testing.T) {
	testenv.Root(t)
	devices, _ := os.ReadFile("/proc/devices")
	const major = 241 // the kernel's range for local use: no driver here
	if strings.Contains(string(devices), "\n241 ") {
		t.Skip("block major 241 has a driver on this machine")
	}
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
