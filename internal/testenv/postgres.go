package testenv

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lib/pq"
)

// PostgreSQLOptions shapes a private PostgreSQL server.
type PostgreSQLOptions struct {
	// SharedBuffers is shared_buffers; "" is 16MB, small enough that a
	// pgbench database of scale 10 (160 MB) is read from and written to
	// the files rather than kept in memory.
	SharedBuffers string
	// Settings are more of the server's settings, NAME=VALUE each
	// (checkpoint_timeout=30s), given with -c.
	Settings []string
	// CgroupProcs, when set, is the cgroup.procs file of the cgroup the
	// server runs in: it joins it before it executes, so that all of its
	// I/O is the cgroup's.
	CgroupProcs string
	// VolumeDir, when set, is the directory (a volume's mount point,
	// such as a CapacityDir's) in which the server keeps its data: the
	// data directory is made there as postgresql, which must not exist
	// yet. "" keeps it beside the socket in /tmp.
	VolumeDir string
	// ObserverPassword, when set, creates the role observer with this
	// password (LOGIN and nothing more: the statistics views are for
	// every role), which logs in over the socket with it (scram-sha-256);
	// the superuser postgres logs in without one.
	ObserverPassword string
}

// PostgreSQLServer is a PostgreSQL server of the test's own: its data
// directory and socket are the test's, it listens on no TCP port, runs
// as the system user postgres (it refuses root), and is shut down when
// the test ends.
type PostgreSQLServer struct {
	opts    PostgreSQLOptions
	bin     string // the server's bin directory
	dir     string // data, socket and logs below it
	dataDir string
	db      *sql.DB
	uid     int
	gid     int
	daemon

	pgbenchScale int
}

// postgresqlStartTimeout bounds a start: a fresh cluster starts in about
// a second here, a machine loaded by the rest of the suite takes longer.
const postgresqlStartTimeout = 60 * time.Second

// PostgreSQLBin is the bin directory of the newest PostgreSQL server
// installed (Debian's /usr/lib/postgresql/VERSION/bin), "" when there is
// none.
func PostgreSQLBin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin") // a malformed pattern is none of ours
	best, bestVersion := "", -1
	for _, d := range dirs {
		v, err := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		if _, serr := os.Stat(filepath.Join(d, "postgres")); err == nil && serr == nil && v > bestVersion {
			best, bestVersion = d, v
		}
	}
	return best
}

// PostgreSQL creates a cluster (initdb) in a directory of the test's own
// and starts a server on it, as the system user postgres and without
// TCP. It needs root and the postgresql package.
func PostgreSQL(t testing.TB, opts PostgreSQLOptions) *PostgreSQLServer {
	t.Helper()
	Root(t)
	bin := PostgreSQLBin()
	Require(t, bin != "", "no PostgreSQL server in /usr/lib/postgresql/*/bin (Debian package postgresql)")
	u, err := user.Lookup("postgres")
	Require(t, err == nil, "no system user postgres (Debian package postgresql creates it)")
	if opts.SharedBuffers == "" {
		opts.SharedBuffers = "16MB"
	}
	if strings.ContainsAny(opts.ObserverPassword, `'\`) {
		t.Fatalf("testenv.PostgreSQL: the observer's password %q holds a quote or a backslash", opts.ObserverPassword)
	}
	s := &PostgreSQLServer{opts: opts, bin: bin}
	s.daemon = daemon{name: "PostgreSQL", logTail: s.logTail}
	s.uid, _ = strconv.Atoi(u.Uid)
	s.gid, _ = strconv.Atoi(u.Gid)
	// A directory of its own in /tmp rather than t.TempDir, whose parent
	// only root may enter, and whose long name would not fit a unix
	// socket's path (108 bytes).
	s.dir, err = os.MkdirTemp("/tmp", "pg-")
	Must(t, err)
	t.Cleanup(func() { os.RemoveAll(s.dir) })
	Must(t, os.Chmod(s.dir, 0o755))
	Must(t, os.Chown(s.dir, s.uid, s.gid))
	s.dataDir = filepath.Join(s.dir, "data")
	if opts.VolumeDir != "" {
		// initdb makes the data directory as postgres, in a volume root
		// owns: made here, and handed over.
		s.dataDir = filepath.Join(opts.VolumeDir, "postgresql")
		Must(t, os.Mkdir(s.dataDir, 0o700))
		Must(t, os.Chown(s.dataDir, s.uid, s.gid))
		traversable(t, opts.VolumeDir)
	}

	initdb := s.asPostgres(filepath.Join(bin, "initdb"), "-D", s.dataDir, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, tail(out, 2000))
	}
	// The superuser over the socket without a password; every other role
	// with its own.
	hba := "local all postgres trust\nlocal all all scram-sha-256\n"
	hbaFile := filepath.Join(s.dataDir, "pg_hba.conf")
	Must(t, os.WriteFile(hbaFile, []byte(hba), 0o600))
	Must(t, os.Chown(hbaFile, s.uid, s.gid))

	s.start(t)
	t.Cleanup(func() {
		if s.db != nil {
			_ = s.db.Close() // the server goes next, and with it every connection
		}
		if err := s.stop(); err != nil {
			t.Errorf("stop PostgreSQL: %v", err)
		}
	})
	if opts.ObserverPassword != "" {
		s.Exec(t, "CREATE ROLE observer LOGIN PASSWORD '"+opts.ObserverPassword+"'")
	}
	return s
}

// asPostgres is a command run as the system user postgres.
func (s *PostgreSQLServer) asPostgres(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(s.uid), Gid: uint32(s.gid)}, Pdeathsig: syscall.SIGKILL}
	cmd.Dir = s.dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}
	return cmd
}

func (s *PostgreSQLServer) args() []string {
	args := []string{"-D", s.dataDir,
		"-c", "listen_addresses=",
		"-c", "unix_socket_directories=" + s.dir,
		"-c", "port=5432",
		"-c", "shared_buffers=" + s.opts.SharedBuffers,
	}
	for _, kv := range s.opts.Settings {
		args = append(args, "-c", kv)
	}
	return args
}

// start runs the server and waits until its socket answers.
func (s *PostgreSQLServer) start(t testing.TB) {
	t.Helper()
	server := filepath.Join(s.bin, "postgres")
	var cmd *exec.Cmd
	if s.opts.CgroupProcs != "" {
		// The shell joins the cgroup as root and becomes the server as
		// postgres: no I/O of the server's happens outside the cgroup.
		// setpriv sets the parent-death signal after the change of user,
		// which clears it.
		setpriv := findBinary("setpriv")
		Require(t, setpriv != "", "no setpriv (Debian package util-linux)")
		cmd = exec.Command("/bin/sh", append([]string{"-c", `echo $$ > "$0" && exec "$@"`, s.opts.CgroupProcs, setpriv,
			"--reuid=" + strconv.Itoa(s.uid), "--regid=" + strconv.Itoa(s.gid), "--clear-groups", "--pdeathsig=KILL", "--", server}, s.args()...)...)
		cmd.Dir = s.dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}
	} else {
		cmd = s.asPostgres(server, s.args()...)
	}
	if s.db == nil {
		connector, err := pq.NewConnector(s.DSN() + " connect_timeout=5")
		Must(t, err)
		s.db = sql.OpenDB(connector)
		s.db.SetMaxOpenConns(1)
	}
	s.run(t, cmd, filepath.Join(s.dir, "console.log"), s.db.PingContext, postgresqlStartTimeout)
}

// stop shuts the server down cleanly and fast (SIGINT: the clients are
// disconnected, the statistics kept for the next start), killing it if
// it has not exited after 30 s.
func (s *PostgreSQLServer) stop() error { return s.daemon.stop(syscall.SIGINT) }

func (s *PostgreSQLServer) logTail() string {
	data, _ := os.ReadFile(filepath.Join(s.dir, "console.log")) // a missing log has nothing to say
	return string(tail(data, 3000))
}

// Socket is the directory of the server's unix socket (libpq's host).
func (s *PostgreSQLServer) Socket() string { return s.dir }

// PID is the postmaster's process id.
func (s *PostgreSQLServer) PID() int { return s.cmd.Process.Pid }

// DataDir is the server's data directory.
func (s *PostgreSQLServer) DataDir() string { return s.dataDir }

// Bin is the directory of the server's programs.
func (s *PostgreSQLServer) Bin() string { return s.bin }

// DSN connects as the superuser postgres over the socket, without a
// password.
func (s *PostgreSQLServer) DSN() string {
	return "host=" + s.dir + " port=5432 user=postgres dbname=postgres sslmode=disable"
}

// ObserverDSN connects as the role observer (ObserverPassword), without
// its password.
func (s *PostgreSQLServer) ObserverDSN() string {
	return "host=" + s.dir + " port=5432 user=observer dbname=postgres sslmode=disable"
}

// Restart shuts the server down cleanly and starts it again on the same
// data directory: its uptime starts again, its process id changes, and
// its statistics go on from where they were.
func (s *PostgreSQLServer) Restart(t testing.TB) {
	t.Helper()
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	s.start(t)
}

// Exec runs a statement as postgres, failing the test on an error.
func (s *PostgreSQLServer) Exec(t testing.TB, query string, args ...any) {
	t.Helper()
	execSQL(t, s.db, "PostgreSQL", query, args...)
}

// QueryInt reads one integer as postgres, failing the test on an error.
func (s *PostgreSQLServer) QueryInt(t testing.TB, query string, args ...any) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var n int64
	if err := s.db.QueryRowContext(ctx, query, args...).Scan(&n); err != nil {
		t.Fatalf("PostgreSQL: %s: %v", query, err)
	}
	return n
}

// Uptime is the server's own uptime, to the millisecond, failing the
// test on an error.
func (s *PostgreSQLServer) Uptime(t testing.TB) time.Duration {
	t.Helper()
	ms := s.QueryInt(t, "SELECT (extract(epoch FROM now() - pg_postmaster_start_time()) * 1000)::bigint")
	return time.Duration(ms) * time.Millisecond
}

// PgbenchInit creates pgbench's tables at scale (100,000 accounts, about
// 16 MB, per unit; 0 is 10), once per server and scale. It takes about
// 10 s at scale 10 on this project's 2-CPU machines.
func PgbenchInit(ctx context.Context, t testing.TB, s *PostgreSQLServer, scale int) {
	t.Helper()
	if scale == 0 {
		scale = 10
	}
	if s.pgbenchScale == scale {
		return
	}
	start := time.Now()
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, "pgbench"), "-i", "-q", "-s", strconv.Itoa(scale),
		"-h", s.dir, "-p", "5432", "-U", "postgres", "postgres")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pgbench -i: %v\n%s", err, tail(out, 3000))
	}
	t.Logf("pgbench -i -s %d: %v", scale, time.Since(start).Round(time.Millisecond))
	s.pgbenchScale = scale
}

// PgbenchOptions shapes a pgbench load. The zero value is pgbench's
// TPC-B-like transaction from 2 clients at 100 transactions a second, in
// all, for 5 s.
type PgbenchOptions struct {
	// Builtin is a built-in script: "" is tpcb-like; simple-update,
	// select-only.
	Builtin string
	Clients int
	// Rate is --rate, transactions per second over all clients: an open
	// loop, each transaction scheduled (Poisson arrivals) whether the
	// last one finished or not. 0 is 100; negative runs unthrottled.
	Rate     float64
	Duration time.Duration // -T, in whole seconds
}

func (o *PgbenchOptions) defaults() {
	if o.Builtin == "" {
		o.Builtin = "tpcb-like"
	}
	if o.Clients == 0 {
		o.Clients = 2
	}
	if o.Rate == 0 {
		o.Rate = 100
	}
	if o.Duration == 0 {
		o.Duration = 5 * time.Second
	}
}

// PgbenchResult is pgbench's own account of a load.
type PgbenchResult struct {
	Transactions int     // number of transactions actually processed
	Failed       int     // failed transactions
	TPS          float64 // without the initial connection time
	// LatencyAvg is pgbench's latency average; under --rate it runs from
	// each transaction's scheduled start, its wait behind the others
	// included (the response time of an open loop).
	LatencyAvg time.Duration
	// Latencies are every transaction's, from pgbench's --log, in the
	// order logged, and P95 their 95th percentile (nearest rank).
	Latencies []time.Duration
	P95       time.Duration
	// Lag is the average schedule lag (--rate): how late transactions
	// started after their scheduled time.
	Lag    time.Duration
	Output string
}

// Pgbench starts a pgbench load on the server in the background (after
// PgbenchInit). The load runs for opts.Duration or until ctx is done;
// wait waits for it and returns pgbench's figures, failing the test if
// pgbench failed or its report cannot be read. A load still running when
// the test ends is stopped.
func Pgbench(ctx context.Context, t testing.TB, s *PostgreSQLServer, opts PgbenchOptions) (wait func() PgbenchResult) {
	t.Helper()
	if s.pgbenchScale == 0 {
		t.Fatal("testenv.Pgbench: call PgbenchInit first")
	}
	opts.defaults()
	logDir := t.TempDir()
	secs := max(1, int(opts.Duration.Round(time.Second)/time.Second))
	args := []string{"-b", opts.Builtin, "-c", strconv.Itoa(opts.Clients), "-j", "1", "-T", strconv.Itoa(secs),
		"--log", "--log-prefix=" + filepath.Join(logDir, "pgbench_log"),
		"-h", s.dir, "-p", "5432", "-U", "postgres", "postgres"}
	if opts.Rate > 0 {
		args = append(args, "--rate", strconv.FormatFloat(opts.Rate, 'f', -1, 64))
	}
	cmd := exec.Command(filepath.Join(s.bin, "pgbench"), args...)
	cmd.Dir = logDir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := background(ctx, t, cmd)
	return func() PgbenchResult {
		t.Helper()
		if err := done(); err != nil {
			t.Fatalf("pgbench: %v\n%s", err, tail(out.Bytes(), 3000))
		}
		r, perr := ParsePgbench(out.String())
		if perr != nil {
			t.Fatalf("pgbench's report: %v\n%s", perr, tail(out.Bytes(), 3000))
		}
		logs, _ := filepath.Glob(filepath.Join(logDir, "pgbench_log.*")) // a malformed pattern is none of ours
		for _, name := range logs {
			data, rerr := os.ReadFile(name)
			Must(t, rerr)
			lat, lerr := ParsePgbenchLog(data)
			if lerr != nil {
				t.Fatalf("%s: %v", name, lerr)
			}
			r.Latencies = append(r.Latencies, lat...)
		}
		r.P95 = percentile(r.Latencies, 95)
		return r
	}
}

var (
	pgbenchProcessed = regexp.MustCompile(`(?m)^number of transactions actually processed: (\d+)`)
	pgbenchFailed    = regexp.MustCompile(`(?m)^number of failed transactions: (\d+)`)
	pgbenchTPS       = regexp.MustCompile(`(?m)^tps = ([0-9.]+) \(without initial connection time\)`)
	pgbenchLatency   = regexp.MustCompile(`(?m)^latency average = ([0-9.]+) ms`)
	pgbenchLag       = regexp.MustCompile(`(?m)^rate limit schedule lag: avg ([0-9.]+) \(max [0-9.]+\) ms`)
)

// ParsePgbench reads pgbench's report (its standard output): the
// transactions, the failures, tps and the latency average must be
// there; the schedule lag is read where --rate printed it.
func ParsePgbench(out string) (PgbenchResult, error) {
	r := PgbenchResult{Output: out}
	var missing []string
	find := func(re *regexp.Regexp, what string) float64 {
		m := re.FindStringSubmatch(out)
		if m == nil {
			missing = append(missing, what)
			return 0
		}
		v, _ := strconv.ParseFloat(m[1], 64) // the pattern took digits only
		return v
	}
	r.Transactions = int(find(pgbenchProcessed, "transactions processed"))
	r.TPS = find(pgbenchTPS, "tps")
	r.LatencyAvg = msDuration(find(pgbenchLatency, "latency average"))
	if pgbenchFailed.MatchString(out) {
		r.Failed = int(find(pgbenchFailed, "failed transactions"))
	}
	if pgbenchLag.MatchString(out) {
		r.Lag = msDuration(find(pgbenchLag, "schedule lag"))
	}
	if len(missing) > 0 {
		return r, fmt.Errorf("no %s in pgbench's report", strings.Join(missing, ", "))
	}
	return r, nil
}

// ParsePgbenchLog reads a pgbench --log file: per transaction,
// "client_id transaction_no time script_no time_epoch time_us
// [schedule_lag] ...", time its latency in µs, or "skipped" or "failed"
// (which have none, and are left out).
func ParsePgbenchLog(data []byte) ([]time.Duration, error) {
	var out []time.Duration
	for i, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 6 {
			return nil, fmt.Errorf("line %d: %d fields, want at least 6", i+1, len(f))
		}
		if f[2] == "skipped" || f[2] == "failed" {
			continue
		}
		us, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || us < 0 {
			return nil, fmt.Errorf("line %d: latency %q is not a number of µs", i+1, f[2])
		}
		out = append(out, time.Duration(us)*time.Microsecond)
	}
	return out, nil
}

func msDuration(ms float64) time.Duration { return time.Duration(math.Round(ms * 1e6)) }

// percentile is the p-th percentile by nearest rank; 0 for none.
// Percentile is the latency at percentile p of every transaction's
// (Latencies), nearest rank; 0 without them.
func (r PgbenchResult) Percentile(p float64) time.Duration { return percentile(r.Latencies, p) }

func percentile(v []time.Duration, p float64) time.Duration {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// traversable lets every user pass through dir and the directories above
// it that lie in the temp dir (a test's t.TempDir is root's alone), so
// that a server run as another user reaches its data there.
func traversable(t testing.TB, dir string) {
	t.Helper()
	tmp := filepath.Clean(os.TempDir()) + string(filepath.Separator)
	for d := filepath.Clean(dir); strings.HasPrefix(d, tmp); d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		Must(t, err)
		Must(t, os.Chmod(d, fi.Mode().Perm()|0o011))
	}
}
