package observe

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

func TestParsePostgresSpec(t *testing.T) {
	private := writeDSNFile(t, "postgres://monitor:Fil3Pw@db2:6543/billing\nsecond line\n", 0o600)
	keyValues := writeDSNFile(t, "host=/run/postgresql user=monitor password='Fil3 Pw'\r\n", 0o400)
	for _, tc := range []struct {
		arg      string
		env      []string
		system   string
		redacted string
		password string
		sslmode  pq.SSLMode
		timeout  time.Duration
	}{
		{arg: "host=/run/postgresql user=monitor dbname=postgres", system: "postgres",
			redacted: "host=/run/postgresql port=5432 user=monitor dbname=postgres", sslmode: pq.SSLModeDisable},
		// A keyword is no system: the whole is a connection string.
		{arg: "host=db1 port=6543 user=monitor", system: "postgres", redacted: "host=db1 port=6543 user=monitor"},
		{arg: "erp=host=db1 user=monitor dbname=erp connect_timeout=2 sslmode=require", system: "erp",
			redacted: "host=db1 port=5432 user=monitor dbname=erp", sslmode: pq.SSLModeRequire, timeout: 2 * time.Second},
		{arg: "erp=postgres://monitor@db1/erp", system: "erp", redacted: "host=db1 port=5432 user=monitor dbname=erp"},
		{arg: "env:PGDSN", env: []string{"PGDSN", "host=db1 user=monitor password=En4Pw\n"}, system: "postgres",
			redacted: "host=db1 port=5432 user=monitor", password: "En4Pw"},
		{arg: "billing=file:" + private, system: "billing",
			redacted: "host=db2 port=6543 user=monitor dbname=billing", password: "Fil3Pw"},
		{arg: "db.1=file:" + keyValues, system: "db.1",
			redacted: "host=/run/postgresql port=5432 user=monitor", password: "Fil3 Pw", sslmode: pq.SSLModeDisable},
		// psql's convention: PGPASSWORD for a connection without one ...
		{arg: "host=db1 user=monitor", env: []string{"PGPASSWORD", "Env5Pw"}, system: "postgres",
			redacted: "host=db1 port=5432 user=monitor", password: "Env5Pw"},
		// ... but never over the connection's own.
		{arg: "env:PGDSN", env: []string{"PGDSN", "postgres://monitor:En4Pw@db1/", "PGPASSWORD", "Env5Pw"}, system: "postgres",
			redacted: "host=db1 port=5432 user=monitor", password: "En4Pw"},
		{arg: "erp=host='/run/my sockets' user=monitor", system: "erp",
			redacted: "host='/run/my sockets' port=5432 user=monitor", sslmode: pq.SSLModeDisable},
	} {
		t.Run(tc.arg, func(t *testing.T) {
			spec, err := ParsePostgresSpec(tc.arg, env(tc.env...))
			if err != nil {
				t.Fatal(err)
			}
			if tc.sslmode == "" {
				tc.sslmode = pq.SSLModePrefer // psql's default, not pq's
			}
			if tc.timeout == 0 {
				tc.timeout = postgresTimeout
			}
			if spec.System != tc.system || spec.cfg.Password != tc.password || spec.cfg.SSLMode != tc.sslmode || spec.cfg.ConnectTimeout != tc.timeout {
				t.Errorf("system %q password %q sslmode %q timeout %v, want %q %q %q %v",
					spec.System, spec.cfg.Password, spec.cfg.SSLMode, spec.cfg.ConnectTimeout, tc.system, tc.password, tc.sslmode, tc.timeout)
			}
			checkShown(t, spec, tc.system, tc.redacted, tc.password)
		})
	}
}

func TestParsePostgresSpecRefuses(t *testing.T) {
	dir := t.TempDir()
	public := writeDSNFile(t, "host=db1 password=Sekr1tPw\n", 0o644)
	groupReadable := writeDSNFile(t, "host=db1\n", 0o640)
	empty := writeDSNFile(t, "\n", 0o600)
	for _, tc := range []struct {
		name, arg string
		env       []string
		want      []string // in the message
	}{
		{"password on the command line", "host=db1 user=monitor password=Sekr1tPw", nil,
			[]string{"password", "ps", "env:VAR", "file:PATH", "PGPASSWORD"}},
		{"quoted password with a system", "erp=host=db1 password = 'Sekr1tPw and more'", nil, []string{"password", "ps"}},
		{"password in a URI", "postgres://monitor:Sekr1tPw@db1/postgres", nil, []string{"password", "ps"}},
		{"password as a URI parameter", "postgresql://monitor@db1/postgres?password=Sekr1tPw", nil, []string{"password", "ps"}},
		{"file readable by the group", "file:" + groupReadable, nil, []string{"chmod 600 " + groupReadable}},
		{"file readable by others", "file:" + public, nil, []string{"chmod 600 " + public}},
		{"missing file", "file:" + filepath.Join(dir, "nope"), nil, []string{"no such file"}},
		{"a directory", "file:" + dir, nil, []string{"not a regular file"}},
		{"empty file", "file:" + empty, nil, []string{"empty"}},
		{"unset variable", "env:PGDSN", nil, []string{`"PGDSN" is not set`}},
		{"empty variable", "env:PGDSN", []string{"PGDSN", " \n"}, []string{`"PGDSN" is empty`}},
		{"empty system", "=env:PGDSN", []string{"PGDSN", "host=db1"}, []string{"empty system name"}},
		// libpq would connect to its defaults: a server nobody named.
		{"no connection string", "", nil, []string{`"": no connection string after the system's name`}},
		{"nothing after the system", "erp=", nil, []string{`"erp=": no connection string after the system's name`}},
		{"a keyword as a system", "host=env:PGDSN", []string{"PGDSN", "host=db1"}, []string{`"host" is a connection keyword`}},
		// pq's own messages would quote these; ours never do.
		{"a key without a value", "erp=host=db1 Sekr1tPw", nil, []string{"the command line", "without '='", "expected"}},
		{"an unterminated quote", "env:PGDSN", []string{"PGDSN", "host=db1 password='Sekr1tPw"}, []string{"env:PGDSN", "unterminated"}},
		{"a malformed URI", "env:PGDSN", []string{"PGDSN", "postgres://monitor:Sekr1tPw@db1:notaport/x"}, []string{"env:PGDSN", "malformed URI"}},
		{"a bad value", "env:PGDSN", []string{"PGDSN", "host=db1 port=Sekr1tPw password=Sekr1tPw"}, []string{"env:PGDSN", "malformed connection string"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePostgresSpec(tc.arg, env(tc.env...))
			checkSpecRefused(t, err, "Sekr1tPw", tc.want)
		})
	}
}

func TestConninfoKeys(t *testing.T) {
	for in, want := range map[string][]string{
		"":                                   nil,
		"host=db1":                           {"host"},
		"  host = db1   user=m ":             {"host", "user"},
		`password='it\'s' dbname=x`:          {"password", "dbname"},
		`password=a\ b user=m`:               {"password", "user"},
		"options='-c geqo=off' password=''":  {"options", "password"},
		"application_name=x=y sslmode=allow": {"application_name", "sslmode"},
	} {
		got, err := conninfoKeys(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("conninfoKeys(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"host", "host=db1 user", "=x", "password='open", `password=x\`} {
		if _, err := conninfoKeys(bad); err == nil {
			t.Errorf("conninfoKeys(%q) accepted", bad)
		}
	}
}

// Every source is read before any server is dialled: a system given two
// servers of one kind, or of two, is refused then, naming the flag.
func TestParsePostgresSpecsRefusesSystemTwice(t *testing.T) {
	for _, args := range [][]string{
		{"erp=host=db1", "erp=host=db2"},
		{"host=db1", "postgres=host=db2"},
		{"erp=host=db1", "erp=env:PGDSN"},
	} {
		_, err := ParsePostgresSpecs(args, env("PGDSN", "host=db3"))
		if !errors.Is(err, ErrDatabaseSpec) || !strings.Contains(err.Error(), "given twice") {
			t.Errorf("%q: %v, want a system given twice", args, err)
		}
	}
	var cfg Config
	sock := filepath.Join(t.TempDir(), "none.sock")
	err := cfg.OpenDatabases(context.Background(), []string{"erp=erp@unix(" + sock + ")/"}, []string{"erp=host=" + filepath.Dir(sock)}, env())
	if want := "--postgres: bad database source: system erp given twice, a MySQL server's too"; !errors.As(err, new(*fault.InputError)) || !strings.HasPrefix(asFlags(err), want) {
		t.Errorf("%v, worded %q; want bad input worded %q", err, asFlags(err), want)
	}
	err = cfg.OpenDatabases(context.Background(), nil, []string{"erp=env:NO_SUCH_VAR"}, env())
	if want := "--postgres: bad database source: env:NO_SUCH_VAR"; !errors.As(err, new(*fault.InputError)) || !strings.HasPrefix(asFlags(err), want) {
		t.Errorf("%v, worded %q; want bad input worded %q", err, asFlags(err), want)
	}
}

// A server that does not listen fails at once, as unreachable, naming the
// socket's directory and never the password.
func TestOpenPostgresUnreachable(t *testing.T) {
	dir := t.TempDir()
	for _, dsn := range []string{"host=" + dir + " user=monitor", "host=127.0.0.1 port=1 user=monitor"} {
		spec, err := ParsePostgresSpec(dsn, env("PGPASSWORD", "Unr3achPw"))
		testenv.Must(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		p, err := OpenPostgres(ctx, spec)
		cancel()
		if err == nil {
			_ = p.Close()
			t.Fatalf("%s: opened", dsn)
		}
		if d := time.Since(start); d > 6*time.Second {
			t.Errorf("%s: took %v", dsn, d)
		}
		if !errors.Is(err, ErrDatabaseUnreachable) || !strings.Contains(err.Error(), spec.Redacted()) || strings.Contains(err.Error(), "Unr3achPw") {
			t.Errorf("%s: %v", dsn, err)
		}
	}
	if _, err := OpenPostgres(context.Background(), PostgresSpec{}); !errors.Is(err, ErrDatabaseSpec) {
		t.Errorf("an empty spec: %v", err)
	}
}

func TestPostgresScrub(t *testing.T) {
	spec, err := ParsePostgresSpec("env:PGDSN", env("PGDSN", "host=db1 user=monitor password=Scr4bMe"))
	testenv.Must(t, err)
	err = spec.scrub(fmt.Errorf("postgres %s: %w: %w", spec.Redacted(), ErrDatabaseUnreachable, errors.New("Scr4bMe refused")))
	if strings.Contains(err.Error(), "Scr4bMe") || !strings.Contains(err.Error(), "*** refused") || !errors.Is(err, ErrDatabaseUnreachable) {
		t.Errorf("scrubbed: %v", err)
	}
}

// The statement reads each version's views: up to 16 the checkpointer's
// and the backends' writes in pg_stat_bgwriter, from 17 in
// pg_stat_checkpointer and pg_stat_io; up to 17 the WAL's writes and
// syncs in pg_stat_wal, from 18 in pg_stat_io; pg_stat_io's own sums
// from 16.
func TestPostgresStatusQuery(t *testing.T) {
	for _, tc := range []struct {
		version    int
		has, lacks []string
	}{
		{140011, []string{"pg_stat_wal w", "b.buffers_checkpoint", "b.buffers_backend", "b.buffers_backend_fsync", "w.wal_write", "w.wal_sync", "NULL AS io_reads"},
			[]string{"pg_stat_io", "pg_stat_checkpointer"}},
		{150018, []string{"b.buffers_checkpoint", "w.wal_sync", "NULL AS io_fsyncs"}, []string{"pg_stat_io", "pg_stat_checkpointer"}},
		{160004, []string{"b.buffers_backend_fsync", "w.wal_write", "FROM pg_stat_io) io", "io.reads AS io_reads", "object IN ('relation', 'temp relation')"},
			[]string{"pg_stat_checkpointer", "object = 'wal'", "backend_writes"}},
		{170002, []string{"c.buffers_written AS buffers_checkpoint", "pg_stat_checkpointer c", "io.backend_writes AS buffers_backend",
			"backend_type NOT IN ('checkpointer', 'background writer')", "w.wal_write", "w.wal_sync"},
			[]string{"b.buffers_checkpoint", "b.buffers_backend", "object = 'wal'"}},
		{180001, []string{"io.wal_writes AS wal_write", "io.wal_fsyncs AS wal_sync", "object = 'wal'", "c.buffers_written"},
			[]string{"w.wal_write", "w.wal_sync", "b.buffers_backend"}},
	} {
		q := postgresStatusQuery(tc.version)
		for _, s := range tc.has {
			if !strings.Contains(q, s) {
				t.Errorf("%d: the query lacks %q:\n%s", tc.version, s, q)
			}
		}
		for _, s := range tc.lacks {
			if strings.Contains(q, s) {
				t.Errorf("%d: the query has %q:\n%s", tc.version, s, q)
			}
		}
		// Every column the parser reads is the query's, by its name.
		for _, name := range append(append(slices.Clone(pgRead), pgResets...), "uptime_s") {
			if !strings.Contains(q, " AS "+name+",") && !strings.Contains(q, "."+name+",") && !strings.Contains(q, " AS "+name+" FROM") {
				t.Errorf("%d: no column %s in\n%s", tc.version, name, q)
			}
		}
	}
}

// Servers older than 14 are refused, saying which they are and why.
func TestPostgresUnsupported(t *testing.T) {
	for _, tc := range []struct {
		version, blockSize int
		want               string
	}{
		{130011, 8192, "PostgreSQL 13.11, older than 14, which brought pg_stat_wal"},
		{90624, 8192, "PostgreSQL 9.6.24, older than 14"},
		{150018, 0, "block_size is 0"},
	} {
		err := pgUnsupported(tc.version, tc.blockSize)
		if !errors.Is(err, ErrDatabaseUnsupported) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d, %d: %v, want %q", tc.version, tc.blockSize, err, tc.want)
		}
	}
	for _, v := range []int{140000, 150018, 180001} {
		if err := pgUnsupported(v, 8192); err != nil {
			t.Errorf("%d refused: %v", v, err)
		}
	}
}

// pgRow is a status row as the server returns it: every column the
// query names, counters numbered from 100, the stats_reset times NULL.
func pgRow(set map[string]*string, drop ...string) map[string]sql.NullString {
	row := map[string]sql.NullString{"uptime_s": {String: "3600", Valid: true}, "started": {String: "2026-12-01 10:00:00.123456+00", Valid: true}}
	for i, name := range pgRead {
		row[name] = sql.NullString{String: fmt.Sprint(100 + i), Valid: true}
	}
	for _, name := range pgResets[1:] {
		row[name] = sql.NullString{}
	}
	for k, v := range set {
		if v == nil {
			row[k] = sql.NullString{}
		} else {
			row[k] = sql.NullString{String: *v, Valid: true}
		}
	}
	for _, k := range drop {
		delete(row, k)
	}
	return row
}

func str(s string) *string { return &s }

func TestParsePostgresStatus(t *testing.T) {
	st, err := parsePostgresStatus(pgRow(map[string]*string{"io_reads": nil, "wal_bytes": str("123456789012"), "sessions": str("5")}), 8192, "fdatasync")
	testenv.Must(t, err)
	if st.Sessions != 4 {
		t.Errorf("5 client sessions, the observer's among them: %d", st.Sessions)
	}
	c := st.Counters
	if len(c) != len(PostgresCounters) {
		t.Errorf("%d counters, want %d: %v", len(c), len(PostgresCounters), c)
	}
	at := func(name string) uint64 { return uint64(100 + slices.Index(pgRead, name)) }
	written := at("buffers_checkpoint") + at("buffers_clean") + at("buffers_backend")
	for name, want := range map[string]uint64{
		"blks_read": at("blks_read"), "io_reads": 0, "wal_bytes": 123456789012,
		"blks_written": written, "read_bytes": at("blks_read") * 8192, "written_bytes": written * 8192,
		"wal_flushes": at("wal_sync"),
	} {
		if c[name] != want {
			t.Errorf("%s = %d, want %d", name, c[name], want)
		}
	}
	if st.UptimeS != 3600 || st.Epoch == "" {
		t.Errorf("uptime %d, epoch %q", st.UptimeS, st.Epoch)
	}
	// Under open_datasync the WAL's writes are its flushes.
	st2, err := parsePostgresStatus(pgRow(nil), 16384, "open_datasync")
	testenv.Must(t, err)
	if st2.Counters["wal_flushes"] != at("wal_write") || st2.Counters["read_bytes"] != at("blks_read")*16384 {
		t.Errorf("open_datasync: %v", st2.Counters)
	}
	// A reset of any view's statistics, or another start, is another
	// epoch.
	for _, col := range pgResets {
		st3, err := parsePostgresStatus(pgRow(map[string]*string{col: str("2026-12-02 08:00:00+00")}), 8192, "fdatasync")
		testenv.Must(t, err)
		if st3.Epoch == st.Epoch {
			t.Errorf("%s changed, the epoch did not: %q", col, st3.Epoch)
		}
	}
	for _, tc := range []struct {
		row  map[string]sql.NullString
		want string
	}{
		{pgRow(nil, "wal_sync", "blks_hit"), "the server reports no blks_hit, wal_sync"},
		{pgRow(nil, "uptime_s"), "the server reports no uptime_s"},
		{pgRow(map[string]*string{"uptime_s": nil}), "the server reports no uptime_s"},
		{pgRow(map[string]*string{"wal_fpi": str("-3")}), `wal_fpi is "-3", not a counter`},
		{pgRow(map[string]*string{"blks_read": str("12.5")}), `blks_read is "12.5", not a counter`},
	} {
		_, err := parsePostgresStatus(tc.row, 8192, "fdatasync")
		if !errors.Is(err, ErrDatabaseUnsupported) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want ErrDatabaseUnsupported saying %q", err, tc.want)
		}
	}
}

// fakePostgres is a PostgreSQL server whose counters a test scripts.
type fakePostgres struct {
	counters map[string]uint64
	uptime   uint64
	epoch    string
}

func (d *fakePostgres) Kind() string { return "postgres" }
func (d *fakePostgres) Close() error { return nil }
func (d *fakePostgres) Status(context.Context) (DBStatus, error) {
	c := map[string]uint64{}
	for k, v := range d.counters {
		c[k] = v
	}
	return DBStatus{Counters: c, UptimeS: d.uptime, Epoch: d.epoch}, nil
}

// PostgreSQL's counters survive a clean restart, and a statistics reset
// zeroes some of them: after a restart, a reset (told by its epoch or by
// a counter going back) the reading is a fresh baseline, an event, and
// never a negative or a huge rate.
func TestObservePostgresResets(t *testing.T) {
	f := newFixture(t)
	f.disk(254, 0, "vda", 0, 0, 0, 0, 0)
	f.cg("/pg", 0, 0)
	ctrl := cgroup.Controller{Mode: cgroup.Unified, Version: 2, Root: f.cgroup, Dir: f.cgroup, Name: "io"}
	db := &fakePostgres{counters: map[string]uint64{"blks_read": 1000, "blks_written": 500, "wal_flushes": 40, "buffers_backend_fsync": 2, "xact_commit": 90}, uptime: 100, epoch: "a"}
	o, err := New(Config{FS: sysfs.NewFS(f.sys, f.proc), Ctrl: ctrl, Cgroups: []CgroupSpec{{Path: "/pg", Name: "pg"}},
		Databases: []DatabaseSource{{System: "pg", DB: db}}, Interval: time.Second, Window: time.Hour})
	testenv.Must(t, err)
	testenv.Must(t, o.begin(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)))
	step := func(sec int, change func()) {
		t.Helper()
		change()
		db.uptime = 100 + uint64(sec)
		testenv.Must(t, o.sample(context.Background(), time.Duration(sec)*time.Second))
	}
	step(0, func() {})
	step(1, func() { db.counters["blks_read"] += 10; db.counters["wal_flushes"] += 5 })
	// pg_stat_reset_shared('wal'): the WAL's counters from zero, the
	// epoch another.
	step(2, func() { db.counters["wal_flushes"] = 1; db.counters["blks_read"] += 7; db.epoch = "b" })
	step(3, func() { db.counters["blks_read"] += 3; db.counters["wal_flushes"] += 2 })
	// A database dropped: its rows leave the sums, the epoch unchanged.
	step(4, func() { db.counters["blks_read"] -= 900 })
	step(5, func() { db.counters["blks_read"] += 4 })
	// A clean restart: the counters go on, the uptime starts again.
	f6 := func() { db.counters["blks_read"] += 50; db.counters["buffers_backend_fsync"] += 1 }
	f6()
	db.uptime = 0
	testenv.Must(t, o.sample(context.Background(), 6*time.Second))
	db.uptime = 1
	db.counters["blks_read"] += 6
	testenv.Must(t, o.sample(context.Background(), 7*time.Second))

	doc := o.build()
	pg := doc.Systems[0]
	if pg.Database == nil || pg.Database.Kind != "postgres" {
		t.Fatalf("no postgres series: %+v", pg)
	}
	tot := pg.Database.Totals
	if tot["blks_read"] != 10+3+4+6 || tot["wal_flushes"] != 5+2 {
		t.Errorf("totals %v: want blks_read 23 and wal_flushes 7, the resets' intervals left out", tot)
	}
	if n := events(doc, "pg/postgres", results.EventReset); n != 3 {
		t.Errorf("%d reset events, want 3 (the statistics reset, the counter that went back, the restart): %+v", n, doc.Events)
	}
	for name, col := range pg.Database.Seconds.Counters {
		for i, v := range col {
			if v > 1000 {
				t.Errorf("%s interval %d: %d", name, i, v)
			}
		}
	}
	if got := pg.Database.Seconds.Len(); got != 4 {
		t.Errorf("%d intervals, want 4 (1, 3, 5 and 7 s)", got)
	}
	mean := pg.Database.Summary.Mean
	if mean["durable_writes"] != float64(5+2)/4 || mean["reads"] != 23.0/4 {
		t.Errorf("mean durable_writes %v, reads %v", mean["durable_writes"], mean["reads"])
	}
}

// The MySQL series has durable_writes too: InnoDB's fsyncs.
func TestDurableWritesOfMySQL(t *testing.T) {
	l := dbKinds["mysql"].layout
	c := make([]uint64, len(l.counters))
	c[l.index("data_fsyncs")] = 17
	for _, f := range l.figures() {
		if f.name == "durable_writes" {
			if got := f.of(c); got != 17 {
				t.Errorf("durable_writes of 17 fsyncs: %v", got)
			}
			return
		}
	}
	t.Error("no durable_writes figure")
}

func TestPostgresCrossCheck(t *testing.T) {
	io := &results.ObservedSeries{Summary: &results.SeriesSummary{Mean: map[string]float64{"reads": 50, "writes": 900, "rkb": 400, "wkb": 9000}}}
	db := &results.ObservedSeries{Kind: "postgres", Summary: &results.SeriesSummary{Mean: map[string]float64{
		"reads": 200, "writes": 300, "rkb": 1600, "wkb": 2400, "hits": 5000, "checkpoint_writes": 250, "clean_writes": 30,
		"backend_writes": 20, "wal_kb": 1200, "wal_writes": 80, "durable_writes": 75, "fpi": 12, "wal_records": 400}}}
	c := crossCheck(io, db)
	notes := strings.Join(c.Notes, "\n")
	for _, want := range []string{"shared_buffers (5000/s)", "page cache", "25 % of PostgreSQL's block reads", "300 blocks/s: checkpointer 250, background writer 30, backends 20",
		"1200 KiB/s of records in 80.0 writes/s", "75.0 durable writes/s", "12.0 full-page images/s (3 %", "3.00× PostgreSQL's data writes"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "InnoDB") || strings.Contains(notes, "doublewrite") || strings.Contains(notes, "buffer pool") {
		t.Errorf("InnoDB's words for PostgreSQL:\n%s", notes)
	}
}

// The backend the server names must be a PostgreSQL process on this
// host, started when the server says, in its data directory; its
// parent, the postmaster, is the server's pid.
func TestLocalPostmaster(t *testing.T) {
	proc := t.TempDir()
	data := t.TempDir()
	write := func(pid int, name string, start int, ppid int, cwd string) {
		dir := filepath.Join(proc, fmt.Sprint(pid))
		testenv.Must(t, os.MkdirAll(dir, 0o755))
		testenv.Must(t, os.WriteFile(filepath.Join(dir, "comm"), []byte(name+"\n"), 0o644))
		stat := fmt.Sprintf("%d (%s) S %d %d %d 0 -1 4194304 500 0 0 0 30 12 0 0 20 0 4 0 %d 0 0\n", pid, name, ppid, pid, pid, start)
		testenv.Must(t, os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644))
		if cwd != "" {
			testenv.Must(t, os.Symlink(cwd, filepath.Join(dir, "cwd")))
		}
	}
	testenv.Must(t, os.WriteFile(filepath.Join(proc, "uptime"), []byte("1000.00 1800.00\n"), 0o644))
	write(100, "postgres", 1000, 1, data)     // the postmaster, up 990 s
	write(200, "postgres", 99_000, 100, data) // a backend, up 10 s
	write(300, "bash", 99_000, 100, "")       // no PostgreSQL
	write(400, "postgres", 99_000, 300, "")   // a parent that is not
	write(500, "postgres", 99_000, 100, "/")  // elsewhere
	fs := sysfs.NewFS(t.TempDir(), proc)
	for _, tc := range []struct {
		backend int
		age     time.Duration
		dataDir string
		want    int
		err     string
	}{
		{200, 10 * time.Second, data, 100, ""},
		{200, 10*time.Second + 300*time.Millisecond, "", 100, ""},
		{200, 3 * time.Second, data, 0, "has run for 10s"},
		{300, 10 * time.Second, "", 0, "no PostgreSQL process on this host"},
		{400, 10 * time.Second, "", 0, "is no PostgreSQL process"},
		{500, 10 * time.Second, data, 0, "not in the server's data directory"},
		{600, 10 * time.Second, "", 0, "no PostgreSQL process"},
	} {
		got, err := localPostmaster(fs, tc.backend, tc.age, tc.dataDir)
		if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("backend %d, %v, %q: %d, %v; want %d, %q", tc.backend, tc.age, tc.dataDir, got, err, tc.want, tc.err)
		}
	}
}
