package main

import (
	"os"
	"path/filepath"
	"strings"
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

// observe refuses a bad --postgres source as it does a bad --mysql one,
// with exit status 2 and one line naming --postgres, before it dials a
// server or writes a file, never showing a password: an empty
// connection string (libpq would dial its defaults), a variable unset, a
// file that others may read, a password on the command line, a system
// given two servers (of one kind or two), a server older than 14 is
// refused too, but only once dialled (TestPostgresServer).
func TestObserveRefusesPostgresSources(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "o.json")
	public := filepath.Join(dir, "pg.dsn")
	testenv.Must(t, os.WriteFile(public, []byte("host=/nonexistent password=Sekr1tPw\n"), 0o644))
	testenv.Must(t, os.Chmod(public, 0o644))
	t.Setenv("IOMATRIX_TEST_UNSET_DSN", "") // restored after the test
	testenv.Must(t, os.Unsetenv("IOMATRIX_TEST_UNSET_DSN"))
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--postgres", ""}, `--postgres: bad database source: "": no connection string after the system's name`},
		{[]string{"--postgres", "erp="}, `--postgres: bad database source: "erp=": no connection string after the system's name`},
		{[]string{"--postgres", "erp=env:IOMATRIX_TEST_UNSET_DSN"}, `--postgres: bad database source: env:IOMATRIX_TEST_UNSET_DSN: the environment variable "IOMATRIX_TEST_UNSET_DSN" is not set`},
		{[]string{"--postgres", "erp=file:" + public}, "--postgres: bad database source: file:" + public + ": mode 0644 lets group or others read or write it"},
		{[]string{"--postgres", "host=/nonexistent user=monitor password=Sekr1tPw"}, "--postgres: bad database source: the connection string on the command line holds a password"},
		{[]string{"--postgres", "erp=postgres://monitor:Sekr1tPw@db1/erp"}, "--postgres: bad database source: the connection string on the command line holds a password"},
		{[]string{"--postgres", "erp=host=db1 Sekr1tPw"}, "--postgres: bad database source: the command line: a key without '='"},
		{[]string{"--postgres", "host=env:IOMATRIX_TEST_UNSET_DSN"}, `--postgres: bad database source: "host" is a connection keyword`},
		{[]string{"--postgres", "erp=host=/nonexistent", "--postgres", "erp=host=/nonexistent2"}, "--postgres: bad database source: system erp given twice"},
		{[]string{"--postgres", "host=/nonexistent", "--postgres", "host=/nonexistent2"}, "--postgres: bad database source: system postgres given twice"},
		{[]string{"--mysql", "erp=monitor@tcp(127.0.0.1:1)/", "--postgres", "erp=host=/nonexistent"}, "--postgres: bad database source: system erp given twice, a MySQL server's too"},
	} {
		r := runInProcess(append([]string{"observe", "-q", "--duration", "1s", "-o", out}, c.args...)...)
		checkRefused(t, r, c.says)
		if strings.Contains(r.stdout+r.stderr, "Sekr1tPw") {
			t.Errorf("%q: the password is in the output: %q", c.args, r.stderr)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("%q: %s written", c.args, out)
		}
	}
}
