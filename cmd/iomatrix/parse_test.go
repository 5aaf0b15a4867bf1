package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/iomatrix/iomatrix/internal/testenv"
)

// observe refuses, on one line naming the flag and before it samples,
// dials or writes anything: roots that are not sysfs or procfs, a cgroup
// or a system given twice, a name of two lines, an empty DSN (which the
// driver would dial as the default user at 127.0.0.1:3306), a DSN in an
// unset variable and a database system given twice.
func TestObserveRefusesBeforeSampling(t *testing.T) {
	out := filepath.Join(t.TempDir(), "o.json")
	t.Setenv("IOMATRIX_TEST_UNSET_DSN", "") // restored after the test
	testenv.Must(t, os.Unsetenv("IOMATRIX_TEST_UNSET_DSN"))
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--sysfs", "/nonexistent"}, "--sysfs: /nonexistent does not exist"},
		{[]string{"--sysfs", "/proc"}, "--sysfs: /proc is not a sysfs mount: it has no class/block"},
		{[]string{"--procfs", "/nonexistent"}, "--procfs: /nonexistent does not exist"},
		{[]string{"--cgroup", "/=a", "--cgroup", "/=b"}, "--cgroup"},
		{[]string{"--cgroup", "/=a\nb"}, "--cgroup"},
		{[]string{"--mysql", ""}, `--mysql: bad database source: "": no DSN after the system's name`},
		{[]string{"--mysql", "erp="}, `--mysql: bad database source: "erp=": no DSN after the system's name`},
		{[]string{"--mysql", "erp=env:IOMATRIX_TEST_UNSET_DSN"}, `--mysql: bad database source: env:IOMATRIX_TEST_UNSET_DSN: the environment variable "IOMATRIX_TEST_UNSET_DSN" is not set`},
		{[]string{"--mysql", "erp=monitor@tcp(127.0.0.1:1)/", "--mysql", "erp=monitor@tcp(127.0.0.1:2)/"}, "--mysql: bad database source: system erp given twice"},
		{[]string{"--mysql", "monitor@tcp(127.0.0.1:1)/", "--mysql", "monitor@tcp(127.0.0.1:2)/"}, "--mysql: bad database source: system mysql given twice"},
	} {
		checkRefused(t, runInProcess(append([]string{"observe", "-q", "--duration", "1s", "-o", out}, c.args...)...), c.says)
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("%q: %s written", c.args, out)
		}
	}
}
