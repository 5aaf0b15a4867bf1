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
	return openDB(t, arg, getenv, ParseMySQLSpec, OpenMySQL)
}

// openDB parses a source and opens its server, closed when the test
// ends.
func openDB[S any, D Database](t *testing.T, arg string, getenv func(string) (string, bool),
	parse func(string, func(string) (string, bool)) (S, error), open func(context.Context, S) (D, error)) D {
	t.Helper()
	spec, err := parse(arg, getenv)
	testenv.Must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	db, err := open(ctx, spec)
	testenv.Must(t, err)
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Error(err)
		}
	})
	return db
}

// refusesLogin opens a server with a wrong password (Wr0ngPa55): it must
// be refused within 6 s, as unreachable, in a message that says each of
// says and never the password.
func refusesLogin(t *testing.T, open func(context.Context) (Database, error), says ...string) {
	t.Helper()
	start := time.Now()
	db, err := open(context.Background())
	if err == nil {
		_ = db.Close()
		t.Fatal("a wrong password logged in")
	}
	if d := time.Since(start); d > 6*time.Second {
		t.Errorf("refusing the login took %v", d)
	}
	t.Log(err)
	msg := err.Error()
	if strings.Contains(msg, "Wr0ngPa55") || !errors.Is(err, ErrDatabaseUnreachable) {
		t.Errorf("a wrong password: %v", err)
	}
	for _, s := range says {
		if !strings.Contains(msg, s) {
			t.Errorf("a wrong password: %v, not saying %q", err, s)
		}
	}
}

func dbStatus(t *testing.T, db Database) DBStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := db.Status(ctx)
	testenv.Must(t, err)
	return st
}

// grew fails the test unless each named counter grew from a to b, and
// every one of counters is at least where it was.
func grew(t *testing.T, counters []string, a, b DBStatus, names ...string) {
	t.Helper()
	for _, k := range counters {
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
		before := dbStatus(t, m)
		srv.Exec(t, "CREATE DATABASE w")
		srv.Exec(t, "CREATE TABLE w.t (id INT PRIMARY KEY AUTO_INCREMENT, pad CHAR(200)) ENGINE=InnoDB")
		for i := 0; i < 20; i++ {
			srv.Exec(t, "INSERT INTO w.t (pad) SELECT REPEAT('x', 200) FROM mysql.help_topic LIMIT 200")
		}
		// Writes the table's dirty pages to their files now, rather
		// than when the page cleaner gets round to it.
		srv.Exec(t, "FLUSH TABLES w.t FOR EXPORT")
		srv.Exec(t, "UNLOCK TABLES")
		written = dbStatus(t, m)
		grew(t, DatabaseCounters, before, written, "data_writes", "data_written", "data_fsyncs", "os_log_written")
		if written.UptimeS < before.UptimeS {
			t.Errorf("uptime went back from %d to %d", before.UptimeS, written.UptimeS)
		}
		t.Logf("before %+v\nafter  %+v", before, written)
	})

	t.Run("wrong password", func(t *testing.T) {
		spec, err := ParseMySQLSpec("env:DSN", env("DSN", "observer:Wr0ngPa55@unix("+srv.Socket()+")/"))
		testenv.Must(t, err)
		refusesLogin(t, func(ctx context.Context) (Database, error) { return OpenMySQL(ctx, spec) }, "Access denied", "observer:***@unix(")
	})

	t.Run("MYSQL_PWD", func(t *testing.T) {
		// A user without privileges reads the counters too.
		om := openMySQL(t, "observer@unix("+srv.Socket()+")/", env("MYSQL_PWD", "R1ghtPa55"))
		if st := dbStatus(t, om); st.Counters["os_log_written"] < written.Counters["os_log_written"] {
			t.Errorf("the observer reads %+v, root read %+v", st, written)
		}
	})

	t.Run("restart resets the counters", func(t *testing.T) {
		// An uptime of at least 2 s, so that the restarted server's is
		// smaller whatever second the readings fall in.
		var before DBStatus
		testenv.Until(t, 5*time.Second, "an uptime of 2 s", func() bool {
			before = dbStatus(t, m)
			return before.UptimeS >= 2
		})
		srv.Restart(t)
		// The same MySQL connects again on its own.
		after := dbStatus(t, m)
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
	cg := serverCgroup(t, "mysql")
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

// serverCgroup is a v1 blkio cgroup of the test's own for a server,
// removed when the test ends: register it before the server, whose
// shutdown must come first.
func serverCgroup(t *testing.T, name string) string {
	t.Helper()
	testenv.Root(t)
	const blkio = "/sys/fs/cgroup/blkio"
	_, err := os.Stat(filepath.Join(blkio, "cgroup.procs"))
	testenv.Require(t, err == nil, "no cgroup v1 blkio hierarchy at "+blkio)
	cg, err := os.MkdirTemp(blkio, "iomatrix-"+name+"-test-")
	testenv.Must(t, err)
	t.Cleanup(func() { testenv.RemoveCgroup(t, blkio, cg) })
	return cg
}

// Under sysbench's read-write load on data larger than the buffer pool,
// every counter moves: reads too, from the disk.
func TestMySQLUnderSysbench(t *testing.T) {
	srv := testenv.MariaDB(t, testenv.MariaDBOptions{})
	m := openMySQL(t, srv.DSN(), env())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wait := testenv.Sysbench(ctx, t, srv, testenv.SysbenchOptions{Seconds: 3})
	before := dbStatus(t, m)
	report := wait()
	after := dbStatus(t, m)
	if !strings.Contains(report, "transactions:") {
		t.Errorf("sysbench's report:\n%s", report)
	}
	grew(t, DatabaseCounters, before, after, "data_reads", "data_read", "data_writes", "data_written", "data_fsyncs", "os_log_written")
	t.Logf("before %+v\nafter  %+v", before, after)
}
