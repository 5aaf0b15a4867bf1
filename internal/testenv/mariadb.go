package testenv

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// MariaDBOptions shapes a private MariaDB server.
type MariaDBOptions struct {
	// BufferPool is innodb_buffer_pool_size; "" is 64M, small enough
	// that a load of a few hundred megabytes reads from the disk rather
	// than from memory.
	BufferPool string
	// FlushMethod is innodb_flush_method; "" keeps the server's default
	// (O_DIRECT since MariaDB 10.6), "fsync" sends the data files' I/O
	// through the page cache.
	FlushMethod string
	// CgroupProcs, when set, is the cgroup.procs file of the cgroup the
	// server runs in: it joins it before it executes, so that all of its
	// I/O is the cgroup's.
	CgroupProcs string
	// VolumeDir, when set, is the directory (a volume's mount point,
	// such as a CapacityDir's) in which the server keeps its data: the
	// data directory is made there as mariadb, which must not exist
	// yet. "" keeps it in the test's temp dir. The logs and the socket
	// stay in the temp dir either way.
	VolumeDir string
	// ObserverPassword, when set, creates the user 'observer'@'localhost'
	// with this password (no privileges beyond logging in, which is all
	// that SHOW GLOBAL STATUS needs).
	ObserverPassword string
}

// MariaDBServer is a MariaDB server of the test's own: its data directory
// and socket are the test's, it listens on no network port, and it is
// shut down when the test ends.
type MariaDBServer struct {
	opts    MariaDBOptions
	server  string
	dataDir string
	socket  string
	logDir  string
	db      *sql.DB
	daemon

	sysbenchPrepared bool
}

// mariadbStartTimeout bounds a start: a fresh data directory's first
// start takes about a second here, a machine loaded by the rest of the
// suite takes longer.
const mariadbStartTimeout = 60 * time.Second

// MariaDB installs a data directory and starts a server on it, as root
// (--user=root) and without networking. It needs root and the
// mariadb-server package.
func MariaDB(t testing.TB, opts MariaDBOptions) *MariaDBServer {
	t.Helper()
	Root(t)
	server := findBinary("mariadbd", "mysqld")
	Require(t, server != "", "no mariadbd or mysqld (Debian package mariadb-server)")
	install := findBinary("mariadb-install-db", "mysql_install_db")
	Require(t, install != "", "no mariadb-install-db or mysql_install_db (Debian package mariadb-server)")
	if opts.BufferPool == "" {
		opts.BufferPool = "64M"
	}
	if strings.ContainsAny(opts.ObserverPassword, `'\`) {
		t.Fatalf("testenv.MariaDB: the observer's password %q holds a quote or a backslash", opts.ObserverPassword)
	}
	dir := t.TempDir()
	s := &MariaDBServer{opts: opts, server: server, dataDir: filepath.Join(dir, "data"), logDir: dir}
	s.daemon = daemon{name: "MariaDB", logTail: s.logTail}
	if opts.VolumeDir != "" {
		s.dataDir = filepath.Join(opts.VolumeDir, "mariadb")
	}
	s.socket = filepath.Join(dir, "mariadbd.sock")
	// A unix socket's path must fit sun_path (108 bytes); a long test
	// name makes a long TempDir.
	if len(s.socket) >= 100 {
		short, err := os.MkdirTemp("/tmp", "mdb-")
		Must(t, err)
		t.Cleanup(func() { os.RemoveAll(short) })
		s.socket = filepath.Join(short, "sock")
	}
	out, err := exec.Command(install, "--no-defaults", "--datadir="+s.dataDir, "--user=root",
		"--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve",
		"--innodb-log-file-size=16M").CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", install, err, tail(out, 2000))
	}
	s.start(t)
	t.Cleanup(func() {
		if s.db != nil {
			_ = s.db.Close() // the server goes next, and with it every connection
		}
		if err := s.stop(); err != nil {
			t.Errorf("stop MariaDB: %v", err)
		}
	})
	if opts.ObserverPassword != "" {
		s.Exec(t, "CREATE USER 'observer'@'localhost' IDENTIFIED BY '"+opts.ObserverPassword+"'")
	}
	return s
}

func findBinary(names ...string) string {
	for _, name := range names {
		for _, dir := range []string{"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"} {
			if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				return filepath.Join(dir, name)
			}
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func (s *MariaDBServer) args() []string {
	args := []string{
		"--no-defaults", // the host's /etc/mysql is not the test's
		"--datadir=" + s.dataDir,
		"--socket=" + s.socket,
		"--pid-file=" + filepath.Join(s.dataDir, "mariadbd.pid"),
		"--log-error=" + filepath.Join(s.logDir, "error.log"),
		"--user=root",
		"--skip-networking",
		"--skip-name-resolve",
		"--innodb-buffer-pool-size=" + s.opts.BufferPool,
		"--innodb-log-file-size=16M",
		// A restarted server starts cold, as after a reboot: its first
		// reads come from the disk.
		"--innodb-buffer-pool-dump-at-shutdown=OFF",
		"--innodb-buffer-pool-load-at-startup=OFF",
	}
	if s.opts.FlushMethod != "" {
		args = append(args, "--innodb-flush-method="+s.opts.FlushMethod)
	}
	return args
}

// start runs the server and waits until its socket answers.
func (s *MariaDBServer) start(t testing.TB) {
	t.Helper()
	var cmd *exec.Cmd
	if s.opts.CgroupProcs != "" {
		// The shell joins the cgroup and becomes the server: no I/O of
		// the server's happens outside it.
		cmd = exec.Command("/bin/sh", append([]string{"-c", `echo $$ > "$0" && exec "$@"`, s.opts.CgroupProcs, s.server}, s.args()...)...)
	} else {
		cmd = exec.Command(s.server, s.args()...)
	}
	if s.db == nil {
		cfg := mysql.NewConfig()
		cfg.User, cfg.Net, cfg.Addr = "root", "unix", s.socket
		cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = 5*time.Second, 60*time.Second, 60*time.Second
		// The driver reports the connection a restart broke, and then
		// connects again: nothing for a test's output.
		cfg.Logger = mysql.Logger(quietLogger{})
		connector, err := mysql.NewConnector(cfg)
		Must(t, err)
		s.db = sql.OpenDB(connector)
		s.db.SetMaxOpenConns(1)
	}
	s.run(t, cmd, filepath.Join(s.logDir, "console.log"), s.db.PingContext, mariadbStartTimeout)
}

// stop shuts the server down cleanly (SIGTERM), killing it if it has not
// exited after 30 s.
func (s *MariaDBServer) stop() error { return s.daemon.stop(syscall.SIGTERM) }

func (s *MariaDBServer) logTail() string {
	var b bytes.Buffer
	for _, name := range []string{"console.log", "error.log"} {
		data, _ := os.ReadFile(filepath.Join(s.logDir, name)) // a missing log has nothing to say
		b.Write(tail(data, 3000))
	}
	return b.String()
}

type quietLogger struct{}

func (quietLogger) Print(...any) {}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// Socket is the server's unix socket.
func (s *MariaDBServer) Socket() string { return s.socket }

// PID is the server's process id (the wrapper shell's, which became the
// server, when it runs in a cgroup).
func (s *MariaDBServer) PID() int { return s.cmd.Process.Pid }

// DataDir is the server's data directory.
func (s *MariaDBServer) DataDir() string { return s.dataDir }

// DSN connects as root over the socket, without a password.
func (s *MariaDBServer) DSN() string { return "root@unix(" + s.socket + ")/" }

// Restart shuts the server down cleanly and starts it again on the same
// data directory: its status counters and uptime start again from zero,
// its process id changes.
func (s *MariaDBServer) Restart(t testing.TB) {
	t.Helper()
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	s.start(t)
}

// Exec runs statements as root, failing the test on an error.
func (s *MariaDBServer) Exec(t testing.TB, query string, args ...any) {
	t.Helper()
	execSQL(t, s.db, "MariaDB", query, args...)
}

// Uptime is the server's own uptime, to the second (its Uptime status),
// failing the test on an error.
func (s *MariaDBServer) Uptime(t testing.TB) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var name string
	var seconds int64
	if err := s.db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Uptime'").Scan(&name, &seconds); err != nil {
		t.Fatalf("MariaDB: uptime: %v", err)
	}
	return time.Duration(seconds) * time.Second
}

// SysbenchOptions shapes a sysbench load. The zero value is sysbench's
// oltp_read_write over 4 tables of 100000 rows (about 100 MB with their
// indexes: more than the default buffer pool, so the load reads from the
// disk) from 2 threads with uniformly random rows, for 5 s, as fast as
// it goes.
type SysbenchOptions struct {
	Test      string // a sysbench test: "" is oltp_read_write
	Tables    int
	TableSize int
	Threads   int
	Seconds   int
	// Rate is sysbench's --rate: transactions a second, arriving at
	// random (a Poisson process) and queued until a thread is free; 0 is
	// as fast as the threads go. ParseSysbench tells whether the
	// threads kept up: at most Threads transactions run at once, so a
	// rate needs threads enough for the rate times a transaction's
	// latency.
	Rate int
}

func (o *SysbenchOptions) defaults() {
	if o.Test == "" {
		o.Test = "oltp_read_write"
	}
	if o.Tables == 0 {
		o.Tables = 4
	}
	if o.TableSize == 0 {
		o.TableSize = 100000
	}
	if o.Threads == 0 {
		o.Threads = 2
	}
	if o.Seconds == 0 {
		o.Seconds = 5
	}
}

func (o SysbenchOptions) args(s *MariaDBServer) []string {
	return []string{o.Test, "--db-driver=mysql", "--mysql-socket=" + s.socket, "--mysql-user=root",
		"--mysql-db=sbtest", "--tables=" + strconv.Itoa(o.Tables), "--table-size=" + strconv.Itoa(o.TableSize)}
}

// Sysbench starts a sysbench load on the server in the background, after
// creating its tables the first time (which takes about 15 s for the
// default 4 tables of 100000 rows on this project's 2-CPU machines). The
// load runs for opts.Seconds or until ctx is done; wait waits for it and
// returns sysbench's report (ParseSysbench reads it), failing the test if
// sysbench failed. A load
// still running when the test ends is stopped. It needs the sysbench
// package.
func Sysbench(ctx context.Context, t testing.TB, s *MariaDBServer, opts SysbenchOptions) (wait func() string) {
	t.Helper()
	sysbench := findBinary("sysbench")
	Require(t, sysbench != "", "no sysbench (Debian package sysbench)")
	opts.defaults()
	if !s.sysbenchPrepared {
		s.Exec(t, "CREATE DATABASE IF NOT EXISTS sbtest")
		start := time.Now()
		args := append(opts.args(s), "--threads="+strconv.Itoa(min(opts.Threads, opts.Tables)), "prepare")
		if out, err := exec.CommandContext(ctx, sysbench, args...).CombinedOutput(); err != nil {
			t.Fatalf("sysbench prepare: %v\n%s", err, tail(out, 3000))
		}
		t.Logf("sysbench prepare (%d tables of %d rows): %v", opts.Tables, opts.TableSize, time.Since(start).Round(time.Millisecond))
		s.sysbenchPrepared = true
	}
	args := append(opts.args(s), "--threads="+strconv.Itoa(opts.Threads), "--time="+strconv.Itoa(opts.Seconds),
		"--rand-type=uniform", "--percentile=95", "--histogram=on", "--report-interval=1", "--rate="+strconv.Itoa(opts.Rate), "run")
	cmd := exec.Command(sysbench, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := background(ctx, t, cmd)
	return func() string {
		t.Helper()
		if err := done(); err != nil {
			t.Errorf("sysbench run: %v\n%s", err, tail(out.Bytes(), 3000))
		}
		return out.String()
	}
}
