package testenv

import (
	"os"
	"testing"

	"github.com/iomatrix/iomatrix/internal/sysfs"
)

// MachineTimes is how the machine's CPUs have spent their time so far
// (/proc/stat): a test that judges a time takes it before and after, to
// tell how busy the machine was meanwhile and how much of it the
// hypervisor took (steal), which no tool on the machine can measure
// around.
func MachineTimes(t testing.TB) sysfs.MachineTimes {
	t.Helper()
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	m, err := sysfs.ParseMachineTimes(b)
	if err != nil {
		t.Fatalf("/proc/stat: %v", err)
	}
	return m
}
