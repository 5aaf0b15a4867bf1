package observe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/internal/testenv"
)

func openMySQL(t *testing.T, arg string, getenv func(string) (string, bool)) *MySQL {
	t.Helper()
	spec, err := ParseMySQLSpec(arg, getenv)
	testenv.Must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := OpenMySQL(ctx, spec)
	testenv.Must(t, err)
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	return m
}

func mysqlStatus(t *testing.T, m *MySQL) DBStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := m.Status(ctx)
	testenv.Must(t, err)
	return st
}

// grew fails the test unless each named counter grew from a to b, and
// every counter is at least where it was.
func grew(t *testing.T, a, b DBStatus, names ...string) {
	t.Helper()
	for _, k := range DatabaseCounters {
		if b.Counters[k] < a.Counters[k] {
			t.Errorf("%s went back from %d to %d without a restart", k, a.Counters[k], b.Counters[k])
		}
	}
	for _, k := range names {
		if b.Counters[k] <= a.Counters[k] {
			t.Errorf("%s did not grow: %d, then %d", k, a.Counters[k], b.Counters[k])
		}
	}
}

// One private server for the cases that only read it, in order: the
// restart comes last.
func TestMySQLServer(t *testing.T) {
	srv := testenv.MariaDB(t, testenv.MariaDBOptions{ObserverPassword: "R1ghtPa55"})
	m := openMySQL(t, "env:DSN", env("DSN", srv.DSN()))
	if m.Kind() != "mysql" {
		t.Errorf("Kind() = %q", m.Kind())
	}

	var pid int
	t.Run("server pid", func(t *testing.T) {
		var err error
		pid, err = m.ServerPID(context.Background())
		if err != nil || pid != srv.PID() {
			t.Errorf("ServerPID() = %d, %v; the server is %d", pid, err, srv.PID())
		}
	})

	var written DBStatus
	t.Run("writes grow the counters", func(t *testing.T) {
		before := mysqlStatus(t, m)
		srv.Exec(t, "CREATE DATABASE w")
		srv.Exec(t, "CREATE TABLE w.t (id INT PRIMARY KEY AUTO_INCREMENT, pad CHAR(200)) ENGINE=InnoDB")
		for i := 0; i < 20; i++ {
			srv.Exec(t, "INSERT INTO w.t (pad) SELECT REPEAT('x', 200) FROM mysql.help_topic LIMIT 200")
		}
		// Writes the table's dirty pages to their files now, rather
		// than when the page cleaner gets round to it.
		srv.Exec(t, "FLUSH TABLES w.t FOR EXPORT")
		srv.Exec(t, "UNLOCK TABLES")
		written = mysqlStatus(t, m)
		grew(t, before, written, "data_writes", "data_written", "data_fsyncs", "os_log_written")
		if written.UptimeS < before.UptimeS {
			t.Errorf("uptime went back from %d to %d", before.UptimeS, written.UptimeS)
		}
		t.Logf("before %+v\nafter  %+v", before, written)
	})

	t.Run("wrong password", func(t *testing.T) {
		spec, err := ParseMySQLSpec("env:DSN", env("DSN", "observer:Wr0ngPa55@unix("+srv.Socket()+")/"))
		testenv.Must(t, err)
		start := time.Now()
		wm, err := OpenMySQL(context.Background(), spec)
		if err == nil {
			_ = wm.Close()
			t.Fatal("a wrong password logged in")
		}
		if d := time.Since(start); d > 6*time.Second {
			t.Errorf("refusing the login took %v", d)
		}
		t.Log(err)
		msg := err.Error()
		if strings.Contains(msg, "Wr0ngPa55") || !errors.Is(err, ErrDatabaseUnreachable) ||
			!strings.Contains(msg, "Access denied") || !strings.Contains(msg, "observer:***@unix(") {
			t.Errorf("a wrong password: %v", err)
		}
	})

	t.Run("MYSQL_PWD", func(t *testing.T) {
		// A user without privileges reads the counters too.
		om := openMySQL(t, "observer@unix("+srv.Socket()+")/", env("MYSQL_PWD", "R1ghtPa55"))
		if st := mysqlStatus(t, om); st.Counters["os_log_written"] < written.Counters["os_log_written"] {
			t.Errorf("the observer reads %+v, root read %+v", st, written)
		}
	})

	t.Run("restart resets the counters", func(t *testing.T) {
		// An uptime of at least 2 s, so that the restarted server's is
		// smaller whatever second the readings fall in.
		var before DBStatus
		testenv.Until(t, 5*time.Second, "an uptime of 2 s", func() bool {
			before = mysqlStatus(t, m)
			return before.UptimeS >= 2
		})
		srv.Restart(t)
		// The same MySQL connects again on its own.
		after := mysqlStatus(t, m)
		if after.UptimeS >= before.UptimeS {
			t.Errorf("uptime %d before the restart, %d after", before.UptimeS, after.UptimeS)
		}
		for _, k := range []string{"data_writes", "data_written", "os_log_written"} {
			if after.Counters[k] >= before.Counters[k] {
				t.Errorf("%s: %d before the restart, %d after", k, before.Counters[k], after.Counters[k])
			}
		}
		if p, err := m.ServerPID(context.Background()); err != nil || p != srv.PID() || p == pid {
			t.Errorf("ServerPID() after the restart = %d, %v; the server is %d, was %d", p, err, srv.PID(), pid)
		}
	})
}

// A server started in a cgroup is there from its first I/O: observe
// finds it through ServerPID and /proc/PID/cgroup.
func TestMySQLServerInCgroup(t *testing.T) {
	testenv.Root(t)
	const blkio = "/sys/fs/cgroup/blkio"
	_, err := os.Stat(filepath.Join(blkio, "cgroup.procs"))
	testenv.Require(t, err == nil, "no cgroup v1 blkio hierarchy at "+blkio)
	cg, err := os.MkdirTemp(blkio, "iomatrix-mysql-test-")
	testenv.Must(t, err)
	// Registered first, so it runs after the server's shutdown.
	t.Cleanup(func() { testenv.RemoveCgroup(t, blkio, cg) })
	srv := testenv.MariaDB(t, testenv.MariaDBOptions{CgroupProcs: filepath.Join(cg, "cgroup.procs")})
	m := openMySQL(t, srv.DSN(), env())
	pid, err := m.ServerPID(context.Background())
	testenv.Must(t, err)
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	testenv.Must(t, err)
	if want := ":blkio:/" + filepath.Base(cg) + "\n"; !strings.Contains(string(data), want) {
		t.Errorf("/proc/%d/cgroup lacks %q:\n%s", pid, want, data)
	}
}

// Under sysbench's read-write load on data larger than the buffer pool,
// every counter moves: reads too, from the disk.
func TestMySQLUnderSysbench(t *testing.T) {
	srv := testenv.MariaDB(t, testenv.MariaDBOptions{})
	m := openMySQL(t, srv.DSN(), env())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wait := testenv.Sysbench(ctx, t, srv, testenv.SysbenchOptions{Seconds: 3})
	before := mysqlStatus(t, m)
	report := wait()
	after := mysqlStatus(t, m)
	if !strings.Contains(report, "transactions:") {
		t.Errorf("sysbench's report:\n%s", report)
	}
	grew(t, before, after, "data_reads", "data_read", "data_writes", "data_written", "data_fsyncs", "os_log_written")
	t.Logf("before %+v\nafter  %+v", before, after)
}
