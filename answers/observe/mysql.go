package observe

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/iomatrix/iomatrix/internal/sysfs"
)

// DatabaseCounters names the counters a Database's Status reports, in the
// order observe presents them. They are InnoDB's own, cumulative since
// the server started (MariaDB's and MySQL's SHOW GLOBAL STATUS names in
// brackets). They count the requests InnoDB hands to the operating system,
// not what reaches the disk: with buffered I/O (innodb_flush_method=fsync)
// the page cache may satisfy a read or absorb a write, and the kernel may
// merge or split requests; with O_DIRECT (MariaDB's default since 10.6)
// each data-file request is one request to the device, or more when it
// is split.
//
//   - data_reads (Innodb_data_reads): read requests to InnoDB's files,
//     whatever their size: pages read into the buffer pool on a miss,
//     read-ahead batches, and the doublewrite area and redo log read at
//     start-up.
//   - data_writes (Innodb_data_writes): write requests to the data files
//     (tablespaces and the doublewrite area): a page flushed through the
//     doublewrite buffer is written twice, once within a doublewrite
//     batch and once in place. MariaDB 10.11 leaves the redo log's writes
//     out of this count.
//   - data_read (Innodb_data_read): bytes read by those requests.
//   - data_written (Innodb_data_written): bytes written to the data
//     files, the doublewrite area included. Since MariaDB 10.5.1 the redo
//     log is left out (it is os_log_written); MariaDB 10.5.7 to 10.5.19,
//     10.6.12, 10.11.2 and the releases between counted a doublewrite
//     page as one byte (MDEV-31124).
//   - data_fsyncs (Innodb_data_fsyncs): fsync or fdatasync calls on
//     InnoDB's files, the redo log's flushes at commit included: with
//     innodb_flush_log_at_trx_commit=1 about one per committing group.
//   - dblwr_writes (Innodb_dblwr_writes): doublewrite batches, each a
//     write of up to innodb_doublewrite's area before the pages' own
//     writes.
//   - os_log_written (Innodb_os_log_written): bytes written to the redo
//     log.
var DatabaseCounters = []string{
	"data_reads",
	"data_writes",
	"data_read",
	"data_written",
	"data_fsyncs",
	"dblwr_writes",
	"os_log_written",
}

// mysqlStatusNames maps DatabaseCounters, in their order, to the status
// variables they are read from.
var mysqlStatusNames = []string{
	"Innodb_data_reads",
	"Innodb_data_writes",
	"Innodb_data_read",
	"Innodb_data_written",
	"Innodb_data_fsyncs",
	"Innodb_dblwr_writes",
	"Innodb_os_log_written",
}

const mysqlUptime = "Uptime"

// mysqlQueries counts the statements a server ran since it started, this
// reading's own among them: it only grows while the server runs, so one
// smaller than at the last reading is a restart, which an uptime in whole
// seconds cannot always tell.
const mysqlQueries = "Queries"

// mysqlSessions is the client sessions connected, the observer's own
// among them.
const mysqlSessions = "Threads_connected"

var (
	// ErrDatabaseSpec marks a database source that cannot be used as
	// given: a malformed value, a missing or unsafe DSN file, a password
	// on the command line.
	ErrDatabaseSpec = errors.New("bad database source")
	// ErrDatabaseUnreachable marks a server that could not be reached or
	// refused the login.
	ErrDatabaseUnreachable = errors.New("database unreachable")
	// ErrDatabaseUnsupported marks a server that answers but lacks the
	// counters observe reads (one without InnoDB).
	ErrDatabaseUnsupported = errors.New("database lacks the counters observe reads")
)

// mysqlTimeout bounds connecting and each read and write on the
// connection, so that a server that hangs stops observe's sampling for
// seconds, not minutes.
const mysqlTimeout = 5 * time.Second

// MySQLSpec is a parsed MySQL source: the system the figures belong to
// and the server's connection settings. Its String never shows the
// password.
type MySQLSpec struct {
	// System names the system the server's figures belong to; observe
	// matches it to the cgroup system of the same name.
	System string
	// source says where the DSN came from ("env:VAR", "file:PATH" or
	// "the command line"), for messages.
	source string
	cfg    *mysql.Config
}

// commandLine is the source of a DSN given literally.
const commandLine = "the command line"

// String is the spec as it may be shown: SYSTEM=DSN, the password
// replaced.
func (s MySQLSpec) String() string { return s.System + "=" + s.Redacted() }

// Redacted is the DSN with the password, if any, replaced by "***".
func (s MySQLSpec) Redacted() string {
	if s.cfg == nil {
		return "(none)"
	}
	c := s.cfg.Clone()
	if c.Passwd != "" {
		c.Passwd = "***"
	}
	return c.FormatDSN()
}

var systemName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// mysqlSyntax is how a MySQL source is written (ParseMySQLSpec).
var mysqlSyntax = sourceSyntax{system: "mysql", what: "DSN", example: "a DSN such as monitor@tcp(db1:3306)/"}

// ParseMySQLSpec reads a MySQL source as a user writes it,
// [SYSTEM=]SOURCE; SYSTEM defaults to "mysql". SOURCE is env:VAR (the DSN
// is in that environment variable), file:PATH (the DSN is the file's
// first line; the file must be private to its owner) or a go-sql-driver
// DSN such as monitor@tcp(db1:3306)/ without a password, which would
// show in ps. A DSN without a password takes MYSQL_PWD's, as the mysql
// client does. getenv is os.LookupEnv in production. The errors wrap
// ErrDatabaseSpec and never quote the DSN.
func ParseMySQLSpec(arg string, getenv func(string) (string, bool)) (MySQLSpec, error) {
	system, dsn, from, err := readSource(arg, mysqlSyntax, getenv)
	if err != nil {
		return MySQLSpec{}, err
	}
	spec := MySQLSpec{System: system, source: from}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return MySQLSpec{}, fmt.Errorf("%w: %s: %s", ErrDatabaseSpec, spec.source, dsnProblem(err))
	}
	if cfg.Passwd != "" && spec.source == commandLine {
		return MySQLSpec{}, fmt.Errorf("%w: the DSN on the command line holds a password, which any user sees in ps: "+
			"give the DSN as env:VAR or file:PATH (mode 600), or the password alone in MYSQL_PWD", ErrDatabaseSpec)
	}
	if cfg.Passwd == "" {
		if pw, ok := getenv("MYSQL_PWD"); ok {
			cfg.Passwd = pw
		}
	}
	spec.cfg = cfg
	return spec, nil
}

// readDSNFile reads the first line of a DSN file that only its owner may
// read or write: a password that others can read is no secret.
func readDSNFile(path string) (string, error) {
	if path == "" {
		return "", errors.New("no path follows file")
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", errors.New("no such file")
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", errors.New("not a regular file")
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("mode %04o lets group or others read or write it: chmod 600 %s", fi.Mode().Perm(), path)
	}
	line, err := bufio.NewReader(io.LimitReader(f, 64<<10)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	if line = strings.TrimSpace(line); line == "" {
		return "", errors.New("the first line is empty: it must hold the DSN")
	}
	return line, nil
}

// dsnForm is the DSN syntax that messages about a malformed one show.
const dsnForm = "[user@][unix(/path/to/socket)|tcp(host:port)]/[dbname][?param=value&...]"

// dsnProblem says what is wrong with a DSN the driver refused, in words
// that never quote it: some of the driver's messages quote parameter
// values or the database name, and the DSN may hold a password.
func dsnProblem(err error) string {
	msg := err.Error()
	for _, fixed := range []string{
		"invalid DSN: missing the slash separating the database name",
		"invalid DSN: network address not terminated (missing closing brace)",
		"invalid DSN: did you forget to escape a param value?",
	} {
		if msg == fixed {
			return strings.TrimPrefix(msg, "invalid DSN: ") + ", expected " + dsnForm
		}
	}
	return "malformed DSN (a parameter, its value or the database name is invalid), expected " + dsnForm
}

// MySQL is a MySQL or MariaDB server read for its InnoDB counters over
// one connection.
type MySQL struct {
	spec MySQLSpec
	db   *sql.DB
	// query reads the counters and Uptime in one statement: the server
	// keeps hundreds of status variables, observe reads eight of them
	// every interval.
	query string
}

var _ Database = (*MySQL)(nil)

// OpenMySQL connects to the server and reads its counters once, so that a
// bad DSN, an unreachable server, a refused login or a server without
// InnoDB fails before sampling starts. Connection failures wrap
// ErrDatabaseUnreachable, a server without the counters
// ErrDatabaseUnsupported. No error it returns holds the password.
func OpenMySQL(ctx context.Context, spec MySQLSpec) (*MySQL, error) {
	if spec.cfg == nil {
		return nil, fmt.Errorf("%w: no DSN", ErrDatabaseSpec)
	}
	cfg := spec.cfg.Clone()
	for _, d := range []*time.Duration{&cfg.Timeout, &cfg.ReadTimeout, &cfg.WriteTimeout} {
		if *d == 0 {
			*d = mysqlTimeout
		}
	}
	// The driver's default logger writes to stderr, which a library
	// leaves to the command.
	cfg.Logger = mysql.Logger(nopLogger{})
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, spec.scrub(fmt.Errorf("mysql %s: %w: %w", spec.Redacted(), ErrDatabaseSpec, err))
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	m := &MySQL{spec: spec, db: db, query: statusQuery()}
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close() // the ping's error is the news
		return nil, spec.scrub(fmt.Errorf("mysql %s: %w: %w", spec.Redacted(), ErrDatabaseUnreachable, err))
	}
	if _, err := m.Status(ctx); err != nil {
		_ = db.Close() // the reading's error is the news
		return nil, err
	}
	return m, nil
}

func statusQuery() string {
	names := append(append([]string(nil), mysqlStatusNames...), mysqlUptime, mysqlQueries, mysqlSessions)
	return "SHOW GLOBAL STATUS WHERE Variable_name IN ('" + strings.Join(names, "', '") + "')"
}

// Kind is "mysql", for MariaDB's servers too: they speak its protocol.
func (m *MySQL) Kind() string { return "mysql" }

// Spec is the spec the server was opened with.
func (m *MySQL) Spec() MySQLSpec { return m.spec }

// Status reads the counters and the uptime. A server that went away
// between two readings is an error wrapping ErrDatabaseUnreachable; the
// next call connects again.
func (m *MySQL) Status(ctx context.Context) (DBStatus, error) {
	rows, err := m.statusRows(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return DBStatus{}, m.spec.scrub(fmt.Errorf("mysql %s: SHOW GLOBAL STATUS: %w", m.spec.Redacted(), err))
		}
		return DBStatus{}, m.spec.scrub(fmt.Errorf("mysql %s: SHOW GLOBAL STATUS: %w: %w", m.spec.Redacted(), ErrDatabaseUnreachable, err))
	}
	st, err := parseMySQLStatus(rows)
	if err != nil {
		return DBStatus{}, m.spec.scrub(fmt.Errorf("mysql %s: %w", m.spec.Redacted(), err))
	}
	return st, nil
}

func (m *MySQL) statusRows(ctx context.Context) ([][2]string, error) {
	rows, err := m.db.QueryContext(ctx, m.query)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }() // rows.Err below reports a failed read
	var out [][2]string
	for rows.Next() {
		var r [2]string
		if err := rows.Scan(&r[0], &r[1]); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// parseMySQLStatus turns SHOW GLOBAL STATUS's (Variable_name, Value) rows
// into a DBStatus. Every counter of DatabaseCounters and Uptime must be
// there and be a whole number; rows of other names are ignored.
func parseMySQLStatus(rows [][2]string) (DBStatus, error) {
	values := make(map[string]string, len(rows))
	for _, r := range rows {
		values[strings.ToLower(r[0])] = r[1]
	}
	number := func(name string) (uint64, bool, error) {
		v, ok := values[strings.ToLower(name)]
		if !ok {
			return 0, false, nil
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, true, fmt.Errorf("%w: %s is %q, not a counter", ErrDatabaseUnsupported, name, v)
		}
		return n, true, nil
	}
	st := DBStatus{Counters: make(map[string]uint64, len(DatabaseCounters))}
	var missing []string
	for i, name := range mysqlStatusNames {
		n, ok, err := number(name)
		if err != nil {
			return DBStatus{}, err
		}
		if !ok {
			missing = append(missing, name)
		}
		st.Counters[DatabaseCounters[i]] = n
	}
	uptime, ok, err := number(mysqlUptime)
	if err != nil {
		return DBStatus{}, err
	}
	if !ok {
		missing = append(missing, mysqlUptime)
	}
	st.UptimeS = uptime
	// Queries is a hint: a server without it still has its restarts told
	// by its uptime.
	if q, ok, err := number(mysqlQueries); err == nil && ok {
		st.Queries = q
	}
	if n, ok, err := number(mysqlSessions); err == nil && ok && n > 1 {
		st.Sessions = int(n - 1)
	}
	if len(missing) > 0 {
		return DBStatus{}, fmt.Errorf("%w: the server reports no %s (is InnoDB its storage engine?)",
			ErrDatabaseUnsupported, strings.Join(missing, ", "))
	}
	return st, nil
}

// ServerPID is the server's process id, read from its pid file, when the
// server runs on this host: observe finds the server's cgroup through
// it. A server elsewhere (another host, or a container with a host name
// and pid numbers of its own) is an error.
func (m *MySQL) ServerPID(ctx context.Context) (int, error) {
	pid, err := m.serverPID(ctx)
	if err != nil {
		return 0, m.spec.scrub(fmt.Errorf("mysql %s: server pid: %w", m.spec.Redacted(), err))
	}
	return pid, nil
}

func (m *MySQL) serverPID(ctx context.Context) (int, error) {
	var pidFile, dataDir, host sql.NullString
	if err := m.db.QueryRowContext(ctx, "SELECT @@pid_file, @@datadir, @@hostname").Scan(&pidFile, &dataDir, &host); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrDatabaseUnreachable, err)
	}
	local, err := os.Hostname()
	if err != nil {
		return 0, err
	}
	if host.String != local {
		return 0, fmt.Errorf("the server runs on host %q, not on this one (%q)", host.String, local)
	}
	if pidFile.String == "" {
		return 0, errors.New("the server keeps no pid file")
	}
	path := pidFile.String
	if !filepath.IsAbs(path) {
		path = filepath.Join(dataDir.String, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return parsePIDFile(path, data)
}

// hostPID is ServerPID, for serverCgroup.
func (m *MySQL) hostPID(ctx context.Context, _ sysfs.FS) (int, error) { return m.ServerPID(ctx) }

// parsePIDFile reads a pid file's content and checks that the process
// still runs: a stale file left by a crash names nobody, or somebody
// else.
func parsePIDFile(path string, data []byte) (int, error) {
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("%s holds %q, not a process id", path, strings.TrimSpace(string(data)))
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return 0, fmt.Errorf("%s names process %d, which does not run (a stale pid file?)", path, pid)
	}
	return pid, nil
}

// Close closes the connection.
func (m *MySQL) Close() error {
	if err := m.db.Close(); err != nil {
		return m.spec.scrub(fmt.Errorf("mysql %s: close: %w", m.spec.Redacted(), err))
	}
	return nil
}

// scrub is the last line of defence for the password: whatever an error
// says, the password's text never leaves the package. The sentinels stay
// reachable with errors.Is.
func (s MySQLSpec) scrub(err error) error {
	if s.cfg == nil {
		return err
	}
	return scrubSecret(err, s.cfg.Passwd)
}

// scrubSecret replaces the secret's text wherever err's message holds
// it; err itself when it does not.
func scrubSecret(err error, secret string) error {
	if err == nil || secret == "" {
		return err
	}
	msg := err.Error()
	if !strings.Contains(msg, secret) {
		return err
	}
	return &scrubbedError{msg: strings.ReplaceAll(msg, secret, "***"), err: err}
}

type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }

// Is answers for the scrubbed error: a yes or no leaks nothing, while
// errors.As or Unwrap would hand out the unscrubbed messages.
func (e *scrubbedError) Is(target error) bool { return errors.Is(e.err, target) }

type nopLogger struct{}

func (nopLogger) Print(...any) {}
