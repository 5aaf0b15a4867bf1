package observe

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
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

func openPostgres(t *testing.T, arg string, getenv func(string) (string, bool)) *Postgres {
	t.Helper()
	return openDB(t, arg, getenv, ParsePostgresSpec, OpenPostgres)
}

// One private server for the cases that only read it, in order: the
// restart comes last.
func TestPostgresServer(t *testing.T) {
	srv := testenv.PostgreSQL(t, testenv.PostgreSQLOptions{ObserverPassword: "R1ghtPa55"})
	// The role without privileges reads every counter, its password
	// from PGPASSWORD.
	p := openPostgres(t, srv.ObserverDSN(), env("PGPASSWORD", "R1ghtPa55"))
	if p.Kind() != "postgres" || p.Version() < pgMinVersion {
		t.Errorf("Kind() = %q, Version() = %d", p.Kind(), p.Version())
	}
	t.Logf("PostgreSQL %d, block size %d, wal_sync_method %s", p.Version(), p.blockSize, p.syncMethod)

	var pid int
	t.Run("server pid", func(t *testing.T) {
		var err error
		pid, err = p.ServerPID(context.Background(), sysfs.Default())
		if err != nil || pid != srv.PID() {
			t.Errorf("ServerPID() = %d, %v; the server is %d", pid, err, srv.PID())
		}
		// The superuser reads the data directory too, and the check
		// holds it to the backend's.
		su := openPostgres(t, "env:PGDSN", env("PGDSN", srv.DSN()))
		if got, err := su.ServerPID(context.Background(), sysfs.Default()); err != nil || got != srv.PID() {
			t.Errorf("as postgres: ServerPID() = %d, %v; the server is %d", got, err, srv.PID())
		}
	})

	var written DBStatus
	t.Run("writes grow the counters", func(t *testing.T) {
		before := dbStatus(t, p)
		srv.Exec(t, "CREATE TABLE w (id serial PRIMARY KEY, pad text)")
		for i := 0; i < 20; i++ {
			srv.Exec(t, "INSERT INTO w (pad) SELECT repeat('x', 200) FROM generate_series(1, 500)")
		}
		// Writes the dirty pages now, rather than at the next checkpoint.
		srv.Exec(t, "CHECKPOINT")
		// A backend hands its statistics over at most once a second, and
		// an idle one within 10 s (PGSTAT_IDLE_INTERVAL).
		testenv.Until(t, 30*time.Second, "the checkpoint's writes counted", func() bool {
			written = dbStatus(t, p)
			return written.Counters["buffers_checkpoint"] > before.Counters["buffers_checkpoint"] &&
				written.Counters["xact_commit"] > before.Counters["xact_commit"]+20
		})
		grew(t, PostgresCounters, before, written, "blks_written", "written_bytes", "wal_bytes", "wal_records", "wal_write", "wal_flushes", "xact_commit")
		if written.Counters["written_bytes"] != written.Counters["blks_written"]*p.blockSize {
			t.Errorf("written_bytes %d for %d blocks", written.Counters["written_bytes"], written.Counters["blks_written"])
		}
		if written.UptimeS < before.UptimeS || written.Epoch != before.Epoch {
			t.Errorf("uptime %d then %d, epoch %q then %q", before.UptimeS, written.UptimeS, before.Epoch, written.Epoch)
		}
		t.Logf("before %+v\nafter  %+v", before, written)
	})

	t.Run("wrong password", func(t *testing.T) {
		spec, err := ParsePostgresSpec("env:PGDSN", env("PGDSN", srv.ObserverDSN()+" password=Wr0ngPa55"))
		testenv.Must(t, err)
		refusesLogin(t, func(ctx context.Context) (Database, error) { return OpenPostgres(ctx, spec) }, "password authentication failed", "user=observer")
	})

	t.Run("another release's statement", func(t *testing.T) {
		// As if the server had come back as 18: its statement names
		// pg_stat_checkpointer, which 15 lacks.
		p.query, p.version = postgresStatusQuery(180001), 180001
		st := dbStatus(t, p)
		if p.version != int(srv.QueryInt(t, "SELECT current_setting('server_version_num')::int")) || st.Counters["xact_commit"] == 0 {
			t.Errorf("version %d after the failed statement, counters %v", p.version, st.Counters)
		}
	})

	t.Run("older than 14", func(t *testing.T) {
		// A role whose search_path finds a current_setting that says 13.11
		// before pg_catalog's.
		srv.Exec(t, "CREATE SCHEMA old13")
		srv.Exec(t, "GRANT USAGE ON SCHEMA old13 TO PUBLIC")
		srv.Exec(t, `CREATE FUNCTION old13.current_setting(name text) RETURNS text LANGUAGE sql
			AS $$ SELECT CASE WHEN name = 'server_version_num' THEN '130011' ELSE pg_catalog.current_setting(name) END $$`)
		srv.Exec(t, "CREATE ROLE old LOGIN PASSWORD 'R1ghtPa55'")
		srv.Exec(t, "ALTER ROLE old SET search_path = old13, pg_catalog")
		spec, err := ParsePostgresSpec("host="+srv.Socket()+" user=old dbname=postgres", env("PGPASSWORD", "R1ghtPa55"))
		testenv.Must(t, err)
		op, err := OpenPostgres(context.Background(), spec)
		if err == nil {
			_ = op.Close()
			t.Fatal("a server that says 13.11 was opened")
		}
		if !errors.Is(err, ErrDatabaseUnsupported) || !strings.Contains(err.Error(), "PostgreSQL 13.11, older than 14") {
			t.Errorf("13.11: %v", err)
		}
		var cfg Config
		err = cfg.OpenDatabases(context.Background(), nil, []string{"old=host=" + srv.Socket() + " user=old dbname=postgres"}, env("PGPASSWORD", "R1ghtPa55"))
		if want := "--postgres old: postgres host="; !errors.As(err, new(*fault.InputError)) || !strings.HasPrefix(asFlags(err), want) {
			t.Errorf("%v, worded %q; want bad input worded %q...", err, asFlags(err), want)
		}
	})

	t.Run("statistics reset", func(t *testing.T) {
		before := dbStatus(t, p)
		srv.Exec(t, "SELECT pg_stat_reset_shared('bgwriter')")
		after := dbStatus(t, p)
		if after.Epoch == before.Epoch {
			t.Errorf("pg_stat_reset_shared('bgwriter'): the epoch stayed %q", after.Epoch)
		}
	})

	t.Run("restart", func(t *testing.T) {
		var before DBStatus
		testenv.Until(t, 10*time.Second, "an uptime of 2 s", func() bool {
			before = dbStatus(t, p)
			return before.UptimeS >= 2
		})
		srv.Restart(t)
		// The same Postgres connects again on its own.
		var after DBStatus
		testenv.Until(t, 10*time.Second, "the server answers again", func() bool {
			var err error
			after, err = p.Status(context.Background())
			return err == nil
		})
		if after.UptimeS >= before.UptimeS || after.Epoch == before.Epoch {
			t.Errorf("uptime %d then %d, epoch %q then %q", before.UptimeS, after.UptimeS, before.Epoch, after.Epoch)
		}
		// A clean shutdown keeps the statistics: the counters go on.
		if after.Counters["wal_bytes"] < before.Counters["wal_bytes"] || after.Counters["blks_written"] < before.Counters["blks_written"] {
			t.Errorf("the counters went back over a clean restart: %v, then %v", before.Counters, after.Counters)
		}
		if got, err := p.ServerPID(context.Background(), sysfs.Default()); err != nil || got != srv.PID() || got == pid {
			t.Errorf("ServerPID() after the restart = %d, %v; the server is %d, was %d", got, err, srv.PID(), pid)
		}
	})
}

// pgViews are the statistics views' columns in each version, from the
// release's documentation: stand-ins of them in a schema searched before
// pg_catalog let the server at hand run every version's statement.
var pgViews = map[int]map[string]string{
	14: {
		"pg_stat_bgwriter": "checkpoints_timed bigint, checkpoints_req bigint, checkpoint_write_time float8, checkpoint_sync_time float8, buffers_checkpoint bigint, buffers_clean bigint, maxwritten_clean bigint, buffers_backend bigint, buffers_backend_fsync bigint, buffers_alloc bigint, stats_reset timestamptz",
		"pg_stat_wal":      "wal_records bigint, wal_fpi bigint, wal_bytes numeric, wal_buffers_full bigint, wal_write bigint, wal_sync bigint, wal_write_time float8, wal_sync_time float8, stats_reset timestamptz",
	},
	16: {
		"pg_stat_io": "backend_type text, object text, context text, reads bigint, read_time float8, writes bigint, write_time float8, writebacks bigint, writeback_time float8, extends bigint, extend_time float8, op_bytes bigint, hits bigint, evictions bigint, reuses bigint, fsyncs bigint, fsync_time float8, stats_reset timestamptz",
	},
	17: {
		"pg_stat_bgwriter":     "buffers_clean bigint, maxwritten_clean bigint, buffers_alloc bigint, stats_reset timestamptz",
		"pg_stat_checkpointer": "num_timed bigint, num_requested bigint, restartpoints_timed bigint, restartpoints_req bigint, restartpoints_done bigint, write_time float8, sync_time float8, buffers_written bigint, stats_reset timestamptz",
	},
	18: {
		"pg_stat_wal":          "wal_records bigint, wal_fpi bigint, wal_bytes numeric, wal_buffers_full bigint, stats_reset timestamptz",
		"pg_stat_checkpointer": "num_timed bigint, num_requested bigint, num_done bigint, restartpoints_timed bigint, restartpoints_req bigint, restartpoints_done bigint, write_time float8, sync_time float8, buffers_written bigint, slru_written bigint, stats_reset timestamptz",
		"pg_stat_io":           "backend_type text, object text, context text, reads bigint, read_bytes numeric, read_time float8, writes bigint, write_bytes numeric, write_time float8, writebacks bigint, writeback_time float8, extends bigint, extend_bytes numeric, extend_time float8, hits bigint, evictions bigint, reuses bigint, fsyncs bigint, fsync_time float8, stats_reset timestamptz",
	},
}

// viewsOf are the views of a major version: each the latest release's
// at or before it.
func viewsOf(major int) map[string]string {
	out := map[string]string{}
	for v := 14; v <= major; v++ {
		for name, cols := range pgViews[v] {
			out[name] = cols
		}
	}
	return out
}

// Every version's statement runs on the server at hand (PostgreSQL 15
// here), against stand-ins of that version's views with rows of known
// values, and its row parses to the sums it should.
func TestPostgresStatusQueryOfEveryVersion(t *testing.T) {
	srv := testenv.PostgreSQL(t, testenv.PostgreSQLOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connector, err := pq.NewConnector(srv.DSN())
	testenv.Must(t, err)
	db := sql.OpenDB(connector)
	defer func() { _ = db.Close() }() // a test's own connection: nothing to lose
	db.SetMaxOpenConns(1)             // one session: its search_path
	for _, major := range []int{14, 15, 16, 17, 18} {
		t.Run(fmt.Sprint(major), func(t *testing.T) {
			schema := fmt.Sprintf("v%d", major)
			exec := func(q string) {
				t.Helper()
				if _, err := db.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			exec("DROP SCHEMA IF EXISTS " + schema + " CASCADE")
			exec("CREATE SCHEMA " + schema)
			for name, cols := range viewsOf(major) {
				// One row of the version's columns: the counters 7, the
				// stats_reset time fixed.
				var sel []string
				for _, col := range strings.Split(cols, ", ") {
					f := strings.Fields(col)
					switch f[1] {
					case "text":
						sel = append(sel, "NULL::text AS "+f[0])
					case "timestamptz":
						sel = append(sel, "'2026-12-01 10:00:00+00'::timestamptz AS "+f[0])
					default:
						sel = append(sel, "7::"+f[1]+" AS "+f[0])
					}
				}
				body := "SELECT " + strings.Join(sel, ", ")
				if name == "pg_stat_io" {
					// A relation row of the checkpointer's and one of a
					// client backend's, and from 18 a wal row.
					values := "('checkpointer', 'relation'), ('client backend', 'relation')"
					if major >= 18 {
						values += ", ('client backend', 'wal')"
					}
					body = strings.Replace(body, "NULL::text AS backend_type, NULL::text AS object", "b AS backend_type, o AS object", 1) +
						" FROM (VALUES " + values + ") AS r(b, o)"
				}
				exec("CREATE VIEW " + schema + "." + name + " AS " + body)
			}
			exec("SET search_path = " + schema + ", pg_catalog")
			defer exec("RESET search_path")
			q := postgresStatusQuery(major*10000 + 1)
			rows, err := db.QueryContext(ctx, q)
			if err != nil {
				t.Fatalf("PostgreSQL %d's statement: %v\n%s", major, err, q)
			}
			defer func() { _ = rows.Close() }() // rows were read whole, or the test failed
			row, err := oneRow(rows)
			testenv.Must(t, err)
			st, err := parsePostgresStatus(row, 8192, "fdatasync")
			testenv.Must(t, err)
			c := st.Counters
			// The checkpointer's, the backends' (up to 16 pg_stat_bgwriter's,
			// then the client backend's relation row, not the
			// checkpointer's) and the WAL's (up to 17 pg_stat_wal's, then
			// the wal row) are each 7; pg_stat_io's sums over relations
			// 14 from 16 on.
			want := map[string]uint64{"buffers_checkpoint": 7, "buffers_clean": 7, "buffers_backend": 7, "buffers_backend_fsync": 7,
				"wal_fpi": 7, "wal_bytes": 7, "wal_write": 7, "wal_sync": 7, "io_reads": 0, "io_writes": 0}
			if major >= 16 {
				want["io_reads"], want["io_writes"], want["io_fsyncs"] = 14, 14, 14
			}
			for name, w := range want {
				if c[name] != w {
					t.Errorf("%s = %d, want %d", name, c[name], w)
				}
			}
			if c["blks_read"] == 0 || st.UptimeS > 1<<20 {
				t.Errorf("pg_stat_database's sums %v, uptime %d", c, st.UptimeS)
			}
		})
	}
}

// A private server in a cgroup of its own, under pgbench, observed
// through both its statistics and its cgroup (found from its pid): the
// counters move, the cross-check says how they differ.
func TestObservePostgresUnderPgbench(t *testing.T) {
	cg := serverCgroup(t, "pg")
	srv := testenv.PostgreSQL(t, testenv.PostgreSQLOptions{CgroupProcs: filepath.Join(cg, "cgroup.procs"), ObserverPassword: "Obs3rvePw",
		Settings: []string{"checkpoint_timeout=30s"}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	testenv.PgbenchInit(ctx, t, srv, 10)

	opts := Options{Interval: 200 * time.Millisecond, Window: MinWindow, SaveEvery: time.Second, SaveEveryGiven: true,
		Postgres: []string{"erp=env:ERP_PG"}, EnableV1Counters: true, Out: filepath.Join(t.TempDir(), "obs.json"),
		SysFS: sysfs.SysRoot, ProcFS: sysfs.ProcRoot, CgroupFS: cgroup.DefaultRoot}
	cfg, err := opts.Config()
	testenv.Must(t, err)
	testenv.Must(t, cfg.OpenDatabases(ctx, nil, opts.Postgres, env("ERP_PG", srv.ObserverDSN(), "PGPASSWORD", "Obs3rvePw")))
	defer cfg.CloseDatabases()
	if len(cfg.Databases) != 1 || cfg.Databases[0].Cgroup != "/"+filepath.Base(cg) {
		t.Fatalf("the server's cgroup found from its pid: %+v, want /%s", cfg.Databases, filepath.Base(cg))
	}
	saves := make(chan SaveInfo, 1000)
	cfg.Saved = func(s SaveInfo) { saves <- s }
	o, err := New(cfg)
	testenv.Must(t, err)
	octx, stop := context.WithCancel(ctx)
	type ran struct {
		doc *results.Observation
		err error
	}
	done := make(chan ran, 1)
	go func() { doc, err := o.Run(octx); done <- ran{doc, err} }()
	<-saves // the baseline is taken
	wait := testenv.Pgbench(ctx, t, srv, testenv.PgbenchOptions{Rate: 150, Clients: 4, Duration: 4 * time.Second})
	bench := wait()
	t.Logf("pgbench: %d transactions, %.1f tps, latency average %v, p95 %v, lag %v", bench.Transactions, bench.TPS, bench.LatencyAvg, bench.P95, bench.Lag)
	// A checkpoint writes the load's dirty pages; pgbench's backends
	// handed their statistics over as they ended. Observe until its
	// document holds both.
	srv.Exec(t, "CHECKPOINT")
	counted := func() bool {
		doc, err := results.ReadObservationFile(opts.Out)
		if err != nil {
			return false
		}
		for _, s := range doc.Systems {
			if db := s.Database; s.Name == "erp" && db != nil {
				return db.Totals["buffers_checkpoint"] > 0 && float64(db.Totals["xact_commit"]) >= 0.8*float64(bench.Transactions)
			}
		}
		return false
	}
	deadline := time.After(30 * time.Second)
	for waiting := true; waiting; {
		select {
		case <-saves:
			waiting = !counted()
		case r := <-done:
			t.Fatalf("observe ended before it was stopped: %v", r.err)
		case <-deadline:
			t.Fatal("the load's commits and the checkpoint's writes not observed within 30 s")
		}
	}
	stop()
	r := <-done
	testenv.Must(t, r.err)
	var erp *results.ObservedSystem
	for i := range r.doc.Systems {
		if r.doc.Systems[i].Name == "erp" {
			erp = &r.doc.Systems[i]
		}
	}
	if erp == nil || erp.Database == nil || erp.IO == nil {
		t.Fatalf("erp: %+v", erp)
	}
	tot := erp.Database.Totals
	for _, k := range []string{"xact_commit", "blks_hit", "blks_written", "wal_bytes", "wal_write", "wal_flushes", "buffers_checkpoint"} {
		if tot[k] == 0 {
			t.Errorf("%s did not move: %v", k, tot)
		}
	}
	if got := float64(tot["xact_commit"]); got < 0.8*float64(bench.Transactions) {
		t.Errorf("%v commits counted, pgbench committed %d", got, bench.Transactions)
	}
	if erp.IO.Totals["wios"] == 0 {
		t.Errorf("the cgroup counted no writes: %v", erp.IO.Totals)
	}
	if erp.Database.Summary.Mean["durable_writes"] <= 0 {
		t.Errorf("durable_writes %v", erp.Database.Summary.Mean)
	}
	c := erp.CrossCheck
	if c == nil || !strings.Contains(strings.Join(c.Notes, " "), "The WAL is not among the data writes") {
		t.Fatalf("cross-check %+v", c)
	}
	for _, e := range r.doc.Events {
		if e.Source == "erp/postgres" && (e.Kind == results.EventReset || e.Kind == results.EventGone) {
			t.Errorf("event %+v", e)
		}
	}
	for name, col := range erp.Database.Seconds.Counters {
		for i, v := range col {
			if v > 1<<40 {
				t.Errorf("database %s interval %d: %d", name, i, v)
			}
		}
	}
	t.Logf("database %v\ncgroup %v\nnotes:\n%s", erp.Database.Summary.Mean, erp.IO.Summary.Mean, strings.Join(c.Notes, "\n"))
}
