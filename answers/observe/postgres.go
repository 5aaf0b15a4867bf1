package observe

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"
	"github.com/lib/pq/pqerror"

	"github.com/iomatrix/iomatrix/internal/sysfs"
)

// PostgresCounters names the counters a PostgreSQL server's Status
// reports, in the order observe keeps them. They are the server's
// cumulative statistics (the views they come from in brackets), which
// count what PostgreSQL asks of the operating system, not what reaches
// the disk: PostgreSQL reads and writes its data files through the page
// cache, which may serve a read or hold a write for the kernel's
// writeback. A clean shutdown keeps them for the next start; a crash,
// and pg_stat_reset*, zero them.
//
//   - blks_read, blks_hit (pg_stat_database, summed over its rows, the
//     shared objects' included): blocks read from the OS, page-cache
//     hits among them, and blocks found in shared_buffers.
//   - xact_commit, xact_rollback (pg_stat_database): transactions,
//     observe's own reading, one an interval, among the commits.
//   - buffers_checkpoint, buffers_clean, buffers_backend: data-file
//     blocks written by the checkpointer (pg_stat_bgwriter; from 17 on
//     pg_stat_checkpointer.buffers_written), the background writer
//     (pg_stat_bgwriter) and the other processes, backends and autovacuum
//     among them (pg_stat_bgwriter up to 16; from 17 on the writes of
//     relations in pg_stat_io by every process but those two).
//   - buffers_backend_fsync: fsync calls the backends made themselves,
//     when the checkpointer's queue of them was full (pg_stat_bgwriter up
//     to 16; from 17 on pg_stat_io's fsyncs of relations by every process
//     but the checkpointer and the background writer).
//   - wal_records, wal_fpi, wal_bytes (pg_stat_wal): WAL records,
//     full-page images among them, and the bytes they took.
//   - wal_write, wal_sync: writes of WAL buffers (XLogWrite) and syncs
//     of WAL files (issue_xlog_fsync; 0 under wal_sync_method
//     open_datasync or open_sync, whose writes are durable themselves):
//     pg_stat_wal up to 17, pg_stat_io's rows of the wal object from 18.
//   - io_reads, io_writes, io_extends, io_fsyncs (pg_stat_io, 16 on;
//     0 before): read, write, extend and fsync operations on relations,
//     temporary ones included, by every process. Up to 17 a read or a
//     write is one block; from 18 an operation, which may combine
//     several.
//
// And, from those and the block size and wal_sync_method read when the
// server was opened:
//
//   - blks_written: buffers_checkpoint + buffers_clean + buffers_backend,
//     the data-file blocks written.
//   - read_bytes, written_bytes: blks_read and blks_written in bytes.
//   - wal_flushes: the WAL's durable writes, wal_sync (wal_write under
//     open_datasync or open_sync).
var PostgresCounters = []string{
	"blks_read",
	"blks_hit",
	"xact_commit",
	"xact_rollback",
	"buffers_checkpoint",
	"buffers_clean",
	"buffers_backend",
	"buffers_backend_fsync",
	"wal_records",
	"wal_fpi",
	"wal_bytes",
	"wal_write",
	"wal_sync",
	"io_reads",
	"io_writes",
	"io_extends",
	"io_fsyncs",
	"blks_written",
	"read_bytes",
	"written_bytes",
	"wal_flushes",
}

// pgRead are the counters the status query reads (PostgresCounters less
// those derived from them).
var pgRead = PostgresCounters[:slices.Index(PostgresCounters, "blks_written")]

// pgResets are the status query's columns of the views' stats_reset
// times, and of the server's start: a change in any is a reset.
var pgResets = []string{"started", "database_reset", "bgwriter_reset", "checkpointer_reset", "wal_reset", "io_reset"}

// pgMinVersion is the oldest server observe reads: pg_stat_wal came in
// 14.
const pgMinVersion = 140000

// postgresTimeout bounds connecting, each query and each read and write
// on the connection, so that a server that hangs stops observe's
// sampling for seconds, not minutes.
const postgresTimeout = 5 * time.Second

// Postgres is a PostgreSQL server read for its cumulative statistics
// over one connection.
type Postgres struct {
	spec PostgresSpec
	db   *sql.DB
	// version is server_version_num, blockSize the data files' block
	// size, syncMethod wal_sync_method, read when the server was opened.
	version    int
	blockSize  uint64
	syncMethod string
	// query reads every counter, the uptime and the stats_reset times in
	// one statement, in the version's views.
	query string
}

var _ Database = (*Postgres)(nil)

// OpenPostgres connects to the server, reads its version, block size and
// wal_sync_method, and reads its counters once, so that a bad source, an
// unreachable server, a refused login or a server older than 14 fails
// before sampling starts. Connection failures wrap
// ErrDatabaseUnreachable, a server without the counters
// ErrDatabaseUnsupported. No error it returns holds the password.
func OpenPostgres(ctx context.Context, spec PostgresSpec) (*Postgres, error) {
	if spec.cfg == nil {
		return nil, fmt.Errorf("%w: no connection string", ErrDatabaseSpec)
	}
	connector, err := pq.NewConnectorConfig(spec.cfg.Clone())
	if err != nil {
		return nil, spec.scrub(fmt.Errorf("postgres %s: %w: %w", spec.Redacted(), ErrDatabaseSpec, err))
	}
	connector.Dialer(deadlineDialer{timeout: postgresTimeout})
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	p := &Postgres{spec: spec, db: db}
	if err := p.settings(ctx); err != nil {
		_ = db.Close() // the settings' error is the news
		return nil, err
	}
	if _, err := p.Status(ctx); err != nil {
		_ = db.Close() // the reading's error is the news
		return nil, err
	}
	return p, nil
}

// settings reads what the counters are read and scaled by: the
// version, the block size and wal_sync_method.
func (p *Postgres) settings(ctx context.Context) error {
	qctx, cancel := context.WithTimeout(ctx, postgresTimeout)
	defer cancel()
	var version, blockSize int
	var method string
	err := p.db.QueryRowContext(qctx, "SELECT current_setting('server_version_num')::int, current_setting('block_size')::int, current_setting('wal_sync_method')").
		Scan(&version, &blockSize, &method)
	if err != nil {
		return p.spec.scrub(fmt.Errorf("postgres %s: %w: %w", p.spec.Redacted(), ErrDatabaseUnreachable, err))
	}
	if err := pgUnsupported(version, blockSize); err != nil {
		return fmt.Errorf("postgres %s: %w", p.spec.Redacted(), err)
	}
	p.version, p.blockSize, p.syncMethod = version, uint64(blockSize), method
	p.query = postgresStatusQuery(version)
	return nil
}

// pgUnsupported says why observe cannot read a server of that version
// (server_version_num) and block size, wrapping ErrDatabaseUnsupported;
// nil when it can.
func pgUnsupported(version, blockSize int) error {
	if version < pgMinVersion {
		return fmt.Errorf("%w: the server is PostgreSQL %s, older than 14, which brought pg_stat_wal: its WAL's writes and flushes would not be counted",
			ErrDatabaseUnsupported, pgVersionName(version))
	}
	if blockSize <= 0 {
		return fmt.Errorf("%w: block_size is %d", ErrDatabaseUnsupported, blockSize)
	}
	return nil
}

// pgVersionName is server_version_num as PostgreSQL names the release:
// 150018 is 15.18, 90624 is 9.6.24.
func pgVersionName(v int) string {
	if v >= 100000 {
		return fmt.Sprintf("%d.%d", v/10000, v%10000)
	}
	return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
}

// Kind is "postgres".
func (p *Postgres) Kind() string { return "postgres" }

// Spec is the spec the server was opened with.
func (p *Postgres) Spec() PostgresSpec { return p.spec }

// Version is the server's server_version_num, as read when it was
// opened (150018 for 15.18).
func (p *Postgres) Version() int { return p.version }

// Status reads the counters, the uptime and the statistics' reset
// times. A server that went away between two readings is an error
// wrapping ErrDatabaseUnreachable; the next call connects again. A
// server that no longer has a view or a column the statement reads (it
// came back as another major release) has its settings read again and
// the statement chosen anew.
func (p *Postgres) Status(ctx context.Context) (DBStatus, error) {
	values, err := p.statusRow(ctx)
	if pq.As(err, pqerror.UndefinedColumn, pqerror.UndefinedTable, pqerror.UndefinedFunction) != nil {
		if err = p.settings(ctx); err != nil {
			return DBStatus{}, err
		}
		values, err = p.statusRow(ctx)
	}
	if err != nil {
		if ctx.Err() != nil {
			return DBStatus{}, p.spec.scrub(fmt.Errorf("postgres %s: statistics: %w", p.spec.Redacted(), err))
		}
		return DBStatus{}, p.spec.scrub(fmt.Errorf("postgres %s: statistics: %w: %w", p.spec.Redacted(), ErrDatabaseUnreachable, err))
	}
	st, err := parsePostgresStatus(values, p.blockSize, p.syncMethod)
	if err != nil {
		return DBStatus{}, p.spec.scrub(fmt.Errorf("postgres %s: %w", p.spec.Redacted(), err))
	}
	return st, nil
}

func (p *Postgres) statusRow(ctx context.Context) (map[string]sql.NullString, error) {
	qctx, cancel := context.WithTimeout(ctx, postgresTimeout)
	defer cancel()
	rows, err := p.db.QueryContext(qctx, p.query)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }() // rows.Err below reports a failed read
	return oneRow(rows)
}

// oneRow reads the first row of rows, column by column, by name.
func oneRow(rows *sql.Rows) (map[string]sql.NullString, error) {
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, err
		}
		return nil, errors.New("the statistics query returned no row")
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	out := make(map[string]sql.NullString, len(cols))
	for i, c := range cols {
		out[c] = vals[i]
	}
	return out, rows.Err()
}

// postgresStatusQuery is the statement that reads every counter of
// pgRead, uptime_s and the columns of pgResets, in one row, from the
// views of a server of that version (server_version_num): what the
// version lacks is NULL.
func postgresStatusQuery(version int) string {
	major := version / 10000
	relation := "object IN ('relation', 'temp relation')"
	// Every process's but the two that write for all: the backends'.
	others := "object = 'relation' AND backend_type NOT IN ('checkpointer', 'background writer')"
	sum := func(col, where string) string { return "coalesce(sum(" + col + ") FILTER (WHERE " + where + "), 0)" }
	cols := []string{
		"floor(extract(epoch FROM now() - pg_postmaster_start_time()))::bigint AS uptime_s",
		"pg_postmaster_start_time()::text AS started",
		// The client sessions, the observer's own among them. A role
		// without pg_read_all_stats sees no other role's backend_type,
		// only that the backend is in a database: counted too (an
		// autovacuum worker then among them).
		"(SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' OR backend_type IS NULL AND datid IS NOT NULL) AS sessions",
		"d.blks_read", "d.blks_hit", "d.xact_commit", "d.xact_rollback", "d.stats_reset::text AS database_reset",
		"b.buffers_clean", "b.stats_reset::text AS bgwriter_reset",
		"w.wal_records", "w.wal_fpi", "w.wal_bytes", "w.stats_reset::text AS wal_reset",
	}
	from := []string{
		"(SELECT coalesce(sum(blks_read), 0) AS blks_read, coalesce(sum(blks_hit), 0) AS blks_hit, " +
			"coalesce(sum(xact_commit), 0) AS xact_commit, coalesce(sum(xact_rollback), 0) AS xact_rollback, " +
			"max(stats_reset) AS stats_reset FROM pg_stat_database) d",
		"pg_stat_bgwriter b",
		"pg_stat_wal w",
	}
	var io []string
	if major <= 16 {
		cols = append(cols, "b.buffers_checkpoint", "b.buffers_backend", "b.buffers_backend_fsync", "NULL AS checkpointer_reset")
	} else {
		cols = append(cols, "c.buffers_written AS buffers_checkpoint", "io.backend_writes AS buffers_backend",
			"io.backend_fsyncs AS buffers_backend_fsync", "c.stats_reset::text AS checkpointer_reset")
		from = append(from, "pg_stat_checkpointer c")
		io = append(io, sum("writes", others)+" AS backend_writes", sum("fsyncs", others)+" AS backend_fsyncs")
	}
	if major <= 17 {
		cols = append(cols, "w.wal_write", "w.wal_sync")
	} else {
		cols = append(cols, "io.wal_writes AS wal_write", "io.wal_fsyncs AS wal_sync")
		io = append(io, sum("writes", "object = 'wal'")+" AS wal_writes", sum("fsyncs", "object = 'wal'")+" AS wal_fsyncs")
	}
	if major >= 16 {
		cols = append(cols, "io.reads AS io_reads", "io.writes AS io_writes", "io.extends AS io_extends",
			"io.fsyncs AS io_fsyncs", "io.stats_reset::text AS io_reset")
		io = append(io, sum("reads", relation)+" AS reads", sum("writes", relation)+" AS writes",
			sum("extends", relation)+" AS extends", sum("fsyncs", relation)+" AS fsyncs", "max(stats_reset) AS stats_reset")
	} else {
		cols = append(cols, "NULL AS io_reads", "NULL AS io_writes", "NULL AS io_extends", "NULL AS io_fsyncs", "NULL AS io_reset")
	}
	if len(io) > 0 {
		from = append(from, "(SELECT "+strings.Join(io, ", ")+" FROM pg_stat_io) io")
	}
	return "SELECT " + strings.Join(cols, ", ") + " FROM " + strings.Join(from, " CROSS JOIN ")
}

// parsePostgresStatus turns the status query's row into a DBStatus:
// every counter of pgRead must be a column and a whole number, or NULL
// where the server lacks it (0); uptime_s must be there; the derived
// counters are computed with the block size and wal_sync_method.
func parsePostgresStatus(values map[string]sql.NullString, blockSize uint64, syncMethod string) (DBStatus, error) {
	st := DBStatus{Counters: make(map[string]uint64, len(PostgresCounters))}
	var missing []string
	number := func(name string) (uint64, error) {
		v, ok := values[name]
		if !ok {
			missing = append(missing, name)
			return 0, nil
		}
		if !v.Valid {
			return 0, nil
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v.String), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: %s is %q, not a counter", ErrDatabaseUnsupported, name, v.String)
		}
		return n, nil
	}
	for _, name := range pgRead {
		n, err := number(name)
		if err != nil {
			return DBStatus{}, err
		}
		st.Counters[name] = n
	}
	var uptime uint64
	if v, ok := values["uptime_s"]; !ok || !v.Valid {
		missing = append(missing, "uptime_s")
	} else {
		n, err := number("uptime_s")
		if err != nil {
			return DBStatus{}, err
		}
		uptime = n
	}
	if len(missing) > 0 {
		return DBStatus{}, fmt.Errorf("%w: the server reports no %s", ErrDatabaseUnsupported, strings.Join(missing, ", "))
	}
	st.UptimeS = uptime
	// Sessions is a hint, as MySQL's: none where the server does not say.
	if v, ok := values["sessions"]; ok && v.Valid {
		if n, err := strconv.Atoi(strings.TrimSpace(v.String)); err == nil && n > 1 {
			st.Sessions = n - 1
		}
	}
	c := st.Counters
	c["blks_written"] = c["buffers_checkpoint"] + c["buffers_clean"] + c["buffers_backend"]
	c["read_bytes"] = c["blks_read"] * blockSize
	c["written_bytes"] = c["blks_written"] * blockSize
	c["wal_flushes"] = c["wal_sync"]
	if walWritesAreDurable(syncMethod) {
		c["wal_flushes"] = c["wal_write"]
	}
	epoch := make([]string, len(pgResets))
	for i, name := range pgResets {
		epoch[i] = values[name].String
	}
	st.Epoch = strings.Join(epoch, "|")
	return st, nil
}

// walWritesAreDurable tells whether the WAL's writes are durable
// themselves under wal_sync_method: the open_* methods open the WAL with
// O_DSYNC or O_SYNC and never sync it apart.
func walWritesAreDurable(method string) bool {
	return method == "open_datasync" || method == "open_sync"
}

// ServerPID is the server's process id on this host (the postmaster's),
// when the server runs on this host: observe finds the server's cgroup
// through it. The connection's backend (pg_backend_pid) must be a
// PostgreSQL process in proc's procfs that started when the server says
// the backend did, in the server's data directory where both can be
// read; the postmaster is its parent. A server elsewhere (another host,
// a container with pid numbers of its own) is an error.
func (p *Postgres) ServerPID(ctx context.Context, proc sysfs.FS) (int, error) {
	pid, err := p.serverPID(ctx, proc)
	if err != nil {
		return 0, p.spec.scrub(fmt.Errorf("postgres %s: server pid: %w", p.spec.Redacted(), err))
	}
	return pid, nil
}

func (p *Postgres) hostPID(ctx context.Context, proc sysfs.FS) (int, error) {
	return p.ServerPID(ctx, proc)
}

// backendQuery reads, on one connection, its backend's pid, the
// backend's age by the server's clock, and the data directory where the
// role may read it.
const backendQuery = "SELECT pid, extract(epoch FROM clock_timestamp() - backend_start)::float8, " +
	"CASE WHEN pg_has_role('pg_read_all_settings', 'MEMBER') THEN current_setting('data_directory') END " +
	"FROM pg_stat_activity WHERE pid = pg_backend_pid()"

func (p *Postgres) serverPID(ctx context.Context, proc sysfs.FS) (int, error) {
	qctx, cancel := context.WithTimeout(ctx, postgresTimeout)
	defer cancel()
	var backend int
	var age float64
	var dataDir sql.NullString
	if err := p.db.QueryRowContext(qctx, backendQuery).Scan(&backend, &age, &dataDir); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrDatabaseUnreachable, err)
	}
	return localPostmaster(proc, backend, time.Duration(age*float64(time.Second)), dataDir.String)
}

// backendAgeSlack is how far a backend's age on this host may be from
// its age by the server's clock: both are read to 10 ms, the backend
// notes its start a moment after the fork, and the host reads its age a
// query's round trip after the server.
const backendAgeSlack = time.Second

// localPostmaster finds the postmaster of a backend the server named by
// pid, age and data directory ("" when not known), and checks that the
// pid is that backend on this host: a PostgreSQL process, started when
// the backend did (a pid on this host that names another process, in a
// server elsewhere or in another pid namespace, did not start at that
// moment), in that data directory where its working directory can be
// read, whose parent is a PostgreSQL process too.
func localPostmaster(proc sysfs.FS, backend int, age time.Duration, dataDir string) (int, error) {
	postgres := func(pid int) bool {
		name := proc.ProcessName(pid)
		return name == "postgres" || name == "postmaster"
	}
	if !postgres(backend) {
		return 0, fmt.Errorf("its backend's pid %d is no PostgreSQL process on this host (the server runs elsewhere, or in a pid namespace of its own)", backend)
	}
	start, err := proc.ProcessStart(backend)
	if err != nil {
		return 0, err
	}
	if d := start.Age - age; d > backendAgeSlack || d < -backendAgeSlack {
		return 0, fmt.Errorf("process %d on this host has run for %v, the server's backend %d for %v: another server's",
			backend, start.Age.Round(10*time.Millisecond), backend, age.Round(10*time.Millisecond))
	}
	if dataDir != "" {
		if cwd, err := proc.ProcessCwd(backend); err == nil {
			if real, err := filepath.EvalSymlinks(dataDir); err == nil && real != cwd {
				return 0, fmt.Errorf("process %d on this host works in %s, not in the server's data directory %s", backend, cwd, real)
			}
		}
	}
	if !postgres(start.PPID) {
		return 0, fmt.Errorf("the parent of backend %d, process %d, is no PostgreSQL process", backend, start.PPID)
	}
	return start.PPID, nil
}

// Close closes the connection.
func (p *Postgres) Close() error {
	if err := p.db.Close(); err != nil {
		return p.spec.scrub(fmt.Errorf("postgres %s: close: %w", p.spec.Redacted(), err))
	}
	return nil
}

// deadlineDialer dials connections whose every read and write must
// finish within timeout: a server that stops answering mid-query fails
// the query then, where pq's cancellation would wait on the same dead
// server.
type deadlineDialer struct{ timeout time.Duration }

func (d deadlineDialer) Dial(network, address string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, address)
}

func (d deadlineDialer) DialTimeout(network, address string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return d.DialContext(ctx, network, address)
}

func (d deadlineDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, address)
	if err != nil {
		return nil, err
	}
	return &deadlineConn{Conn: c, timeout: d.timeout}, nil
}

type deadlineConn struct {
	net.Conn
	timeout time.Duration
}

func (c *deadlineConn) Read(b []byte) (int, error) {
	if err := c.Conn.SetReadDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

func (c *deadlineConn) Write(b []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}
