package observe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/internal/testenv"
)

// env is a getenv over a fixed environment.
func env(vars ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(vars); i += 2 {
		m[vars[i]] = vars[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func writeDSNFile(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dsn")
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // the umask may have narrowed it
		t.Fatal(err)
	}
	return path
}

func TestParseMySQLSpec(t *testing.T) {
	private := writeDSNFile(t, "monitor:Fil3Pw@tcp(db1:3306)/\nsecond line\n", 0o600)
	crlf := writeDSNFile(t, "root@unix(/run/mysqld/mysqld.sock)/\r\n", 0o400)
	for _, tc := range []struct {
		arg      string
		env      []string
		system   string
		redacted string
		user     string
		password string
		addr     string
	}{
		{arg: "root@unix(/run/mysqld/mysqld.sock)/", system: "mysql",
			redacted: "root@unix(/run/mysqld/mysqld.sock)/", user: "root", addr: "/run/mysqld/mysqld.sock"},
		{arg: "db=monitor@tcp(db1:3306)/", system: "db",
			redacted: "monitor@tcp(db1:3306)/", user: "monitor", addr: "db1:3306"},
		// '=' in a parameter is no system name.
		{arg: "root@unix(/s.sock)/?timeout=2s", system: "mysql",
			redacted: "root@unix(/s.sock)/?timeout=2s", user: "root", addr: "/s.sock"},
		{arg: "env:DSN", env: []string{"DSN", "monitor:En4Pw@tcp(db1:3306)/\n"}, system: "mysql",
			redacted: "monitor:***@tcp(db1:3306)/", user: "monitor", password: "En4Pw", addr: "db1:3306"},
		{arg: "billing=env:DSN", env: []string{"DSN", "monitor@tcp(db2:3306)/"}, system: "billing",
			redacted: "monitor@tcp(db2:3306)/", user: "monitor", addr: "db2:3306"},
		{arg: "file:" + private, system: "mysql",
			redacted: "monitor:***@tcp(db1:3306)/", user: "monitor", password: "Fil3Pw", addr: "db1:3306"},
		{arg: "db.1=file:" + crlf, system: "db.1",
			redacted: "root@unix(/run/mysqld/mysqld.sock)/", user: "root", addr: "/run/mysqld/mysqld.sock"},
		// The mysql client's convention: MYSQL_PWD for a DSN without one.
		{arg: "root@unix(/s.sock)/", env: []string{"MYSQL_PWD", "Env5Pw"}, system: "mysql",
			redacted: "root:***@unix(/s.sock)/", user: "root", password: "Env5Pw", addr: "/s.sock"},
		{arg: "env:DSN", env: []string{"DSN", "monitor@tcp(db1:3306)/", "MYSQL_PWD", "Env5Pw"}, system: "mysql",
			redacted: "monitor:***@tcp(db1:3306)/", user: "monitor", password: "Env5Pw", addr: "db1:3306"},
		// ... but never over the DSN's own.
		{arg: "env:DSN", env: []string{"DSN", "monitor:En4Pw@tcp(db1:3306)/", "MYSQL_PWD", "Env5Pw"}, system: "mysql",
			redacted: "monitor:***@tcp(db1:3306)/", user: "monitor", password: "En4Pw", addr: "db1:3306"},
	} {
		t.Run(tc.arg, func(t *testing.T) {
			spec, err := ParseMySQLSpec(tc.arg, env(tc.env...))
			if err != nil {
				t.Fatal(err)
			}
			if spec.System != tc.system || spec.cfg.User != tc.user || spec.cfg.Passwd != tc.password || spec.cfg.Addr != tc.addr {
				t.Errorf("system %q user %q password %q addr %q, want %q %q %q %q",
					spec.System, spec.cfg.User, spec.cfg.Passwd, spec.cfg.Addr, tc.system, tc.user, tc.password, tc.addr)
			}
			checkShown(t, spec, tc.system, tc.redacted, tc.password)
		})
	}
}

// checkShown checks how a spec shows: SYSTEM=REDACTED, never the
// password, however formatted.
func checkShown(t *testing.T, spec interface{ Redacted() string }, system, redacted, password string) {
	t.Helper()
	if got := spec.Redacted(); got != redacted {
		t.Errorf("Redacted() = %q, want %q", got, redacted)
	}
	if want := system + "=" + redacted; fmt.Sprint(spec) != want {
		t.Errorf("String() = %q, want %q", fmt.Sprint(spec), want)
	}
	if s := fmt.Sprintf("%v %+v %s", spec, spec, spec); password != "" && strings.Contains(s, password) {
		t.Errorf("formatting the spec shows the password: %s", s)
	}
}

func TestParseMySQLSpecRefuses(t *testing.T) {
	dir := t.TempDir()
	public := writeDSNFile(t, "monitor:Sekr1tPw@tcp(db1:3306)/\n", 0o644)
	groupWritable := writeDSNFile(t, "monitor@tcp(db1:3306)/\n", 0o620)
	empty := writeDSNFile(t, "\n", 0o600)
	for _, tc := range []struct {
		name, arg string
		env       []string
		want      []string // in the message
	}{
		{"password on the command line", "monitor:Sekr1tPw@tcp(db1:3306)/", nil,
			[]string{"password", "ps", "env:VAR", "file:PATH", "MYSQL_PWD"}},
		{"password on the command line with a system", "db=monitor:Sekr1tPw@unix(/s.sock)/", nil,
			[]string{"password", "ps", "env:VAR"}},
		{"file readable by others", "file:" + public, nil, []string{"chmod 600 " + public}},
		{"file writable by the group", "file:" + groupWritable, nil, []string{"chmod 600 " + groupWritable}},
		{"missing file", "file:" + filepath.Join(dir, "nope"), nil, []string{"file:" + filepath.Join(dir, "nope"), "no such file"}},
		{"a directory", "file:" + dir, nil, []string{"not a regular file"}},
		{"empty file", "file:" + empty, nil, []string{"empty"}},
		{"no path", "file:", nil, []string{"no path"}},
		{"unset variable", "env:DSN", nil, []string{`"DSN" is not set`}},
		{"empty variable", "env:DSN", []string{"DSN", " \n"}, []string{`"DSN" is empty`}},
		{"empty system", "=env:DSN", []string{"DSN", "root@unix(/s)/"}, []string{"empty system name"}},
		// The driver would dial the default user at 127.0.0.1:3306.
		{"no DSN", "", nil, []string{`"": no DSN after the system's name`}},
		{"no DSN after the system", "erp=", nil, []string{`"erp=": no DSN after the system's name`}},
		{"a blank DSN", "erp= ", nil, []string{`"erp= ": no DSN`}},
		{"no variable", "erp=env:", nil, []string{`the environment variable "" is not set`}},
		// The driver's own messages would quote these; ours never do.
		{"unterminated address", "monitor:Sekr1tPw@tcp(db1:3306/", nil,
			[]string{"the command line", "missing closing brace", "expected"}},
		{"no slash", "monitor:Sekr1tPw@tcp(db1:3306)", nil, []string{"missing the slash"}},
		{"bad parameter value", "monitor@tcp(db1:3306)/?parseTime=Sekr1tPw", nil, []string{"malformed DSN"}},
		{"bad timeout", "monitor@tcp(db1:3306)/?timeout=Sekr1tPw", nil, []string{"malformed DSN"}},
		{"bad database name", "monitor@tcp(db1:3306)/Sekr1tPw%zz", nil, []string{"malformed DSN"}},
		{"malformed DSN from the environment", "env:DSN", []string{"DSN", "monitor:Sekr1tPw@tcp(db1)/?readTimeout=Sekr1tPw"},
			[]string{"env:DSN", "malformed DSN"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseMySQLSpec(tc.arg, env(tc.env...))
			checkSpecRefused(t, err, "Sekr1tPw", tc.want)
		})
	}
}

// checkSpecRefused checks a source's refusal: an ErrDatabaseSpec whose
// message says each of want and never the secret.
func checkSpecRefused(t *testing.T, err error, secret string, want []string) {
	t.Helper()
	if err == nil {
		t.Fatal("accepted")
	}
	if !errors.Is(err, ErrDatabaseSpec) {
		t.Errorf("not an ErrDatabaseSpec: %v", err)
	}
	msg := err.Error()
	if strings.Contains(msg, secret) {
		t.Errorf("the message quotes the secret: %s", msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("message %q lacks %q", msg, w)
		}
	}
}

func statusRows(except string, extra ...[2]string) [][2]string {
	var rows [][2]string
	for i, name := range append(append([]string(nil), mysqlStatusNames...), mysqlUptime) {
		if name != except {
			rows = append(rows, [2]string{name, fmt.Sprint(1000 + i)})
		}
	}
	return append(rows, extra...)
}

func TestParseMySQLStatus(t *testing.T) {
	st, err := parseMySQLStatus(statusRows("", [2]string{"Innodb_buffer_pool_reads", "abc"}))
	if err != nil {
		t.Fatal(err)
	}
	for i, key := range DatabaseCounters {
		if got, ok := st.Counters[key]; !ok || got != uint64(1000+i) {
			t.Errorf("%s = %d (present %v), want %d", key, got, ok, 1000+i)
		}
	}
	if len(st.Counters) != len(DatabaseCounters) {
		t.Errorf("%d counters, want %d: %v", len(st.Counters), len(DatabaseCounters), st.Counters)
	}
	if st.UptimeS != uint64(1000+len(mysqlStatusNames)) {
		t.Errorf("UptimeS = %d", st.UptimeS)
	}
	if q, _ := parseMySQLStatus(append(statusRows(""), [2]string{"Queries", "4242"})); q.Queries != 4242 {
		t.Errorf("Queries = %d, want 4242", q.Queries)
	}
	// Threads_connected counts the observer's own session, which is left
	// out.
	for n, want := range map[string]int{"9": 8, "1": 0} {
		if q, _ := parseMySQLStatus(append(statusRows(""), [2]string{"Threads_connected", n})); q.Sessions != want {
			t.Errorf("Threads_connected %s: %d sessions, want %d", n, q.Sessions, want)
		}
	}

	// The server's spelling of a name is not ours to insist on.
	lower := statusRows("")
	for i := range lower {
		lower[i][0] = strings.ToLower(lower[i][0])
	}
	if _, err := parseMySQLStatus(lower); err != nil {
		t.Errorf("lower-case names: %v", err)
	}

	_, err = parseMySQLStatus(statusRows("Innodb_dblwr_writes"))
	if !errors.Is(err, ErrDatabaseUnsupported) || !strings.Contains(err.Error(), "Innodb_dblwr_writes") ||
		strings.Contains(err.Error(), "Innodb_data_reads") {
		t.Errorf("one counter missing: %v", err)
	}
	_, err = parseMySQLStatus([][2]string{{mysqlUptime, "5"}})
	if !errors.Is(err, ErrDatabaseUnsupported) || !strings.Contains(err.Error(), strings.Join(mysqlStatusNames, ", ")) ||
		!strings.Contains(err.Error(), "InnoDB") {
		t.Errorf("no InnoDB: %v", err)
	}
	_, err = parseMySQLStatus(statusRows(mysqlUptime))
	if err == nil || !strings.Contains(err.Error(), "Uptime") {
		t.Errorf("no uptime: %v", err)
	}
	for _, bad := range []string{"12a", "-1", "1.5", ""} {
		rows := statusRows("")
		rows[1][1] = bad
		_, err := parseMySQLStatus(rows)
		if !errors.Is(err, ErrDatabaseUnsupported) || !strings.Contains(err.Error(), fmt.Sprintf("%s is %q", rows[1][0], bad)) {
			t.Errorf("value %q: %v", bad, err)
		}
	}
}

// The counters' names are the status variables' less their prefix: a
// table edited on one side only is caught here.
func TestDatabaseCountersMatchStatusNames(t *testing.T) {
	if len(DatabaseCounters) != len(mysqlStatusNames) {
		t.Fatalf("%d counters, %d status names", len(DatabaseCounters), len(mysqlStatusNames))
	}
	q := statusQuery()
	for i, key := range DatabaseCounters {
		if !strings.EqualFold("Innodb_"+key, mysqlStatusNames[i]) {
			t.Errorf("counter %s is read from %s", key, mysqlStatusNames[i])
		}
		if !strings.Contains(q, "'"+mysqlStatusNames[i]+"'") {
			t.Errorf("the query %q does not ask for %s", q, mysqlStatusNames[i])
		}
	}
	if !strings.Contains(q, "'Uptime'") || !strings.HasPrefix(q, "SHOW GLOBAL STATUS WHERE Variable_name IN (") {
		t.Errorf("query %q", q)
	}
}

func TestScrub(t *testing.T) {
	spec, err := ParseMySQLSpec("env:DSN", env("DSN", "monitor:Scr4bMe@tcp(db1:3306)/"))
	if err != nil {
		t.Fatal(err)
	}
	inner := errors.New("server said Scr4bMe twice: Scr4bMe")
	err = spec.scrub(fmt.Errorf("mysql %s: %w: %w", spec.Redacted(), ErrDatabaseUnreachable, inner))
	if strings.Contains(err.Error(), "Scr4bMe") || !strings.Contains(err.Error(), "server said *** twice: ***") {
		t.Errorf("scrubbed: %v", err)
	}
	if !errors.Is(err, ErrDatabaseUnreachable) || !errors.Is(err, inner) || errors.Is(err, ErrDatabaseSpec) {
		t.Errorf("errors.Is through the scrubbed error: %v", err)
	}
	if errors.Unwrap(err) != nil {
		t.Errorf("the unscrubbed error can be unwrapped")
	}
	clean := fmt.Errorf("mysql: %w", ErrDatabaseUnreachable)
	if got := spec.scrub(clean); got != clean {
		t.Errorf("an error without the password changed: %v", got)
	}
	if spec.scrub(nil) != nil {
		t.Error("scrub(nil) != nil")
	}
}

func TestParsePIDFile(t *testing.T) {
	if pid, err := parsePIDFile("x.pid", []byte(fmt.Sprintf("%d\n", os.Getpid()))); err != nil || pid != os.Getpid() {
		t.Errorf("own pid: %d, %v", pid, err)
	}
	for _, bad := range []string{"", "abc", "-5", "0"} {
		if _, err := parsePIDFile("x.pid", []byte(bad)); err == nil || !strings.Contains(err.Error(), "not a process id") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	// A process that ran and was reaped: its pid names nobody now (pids
	// are not reused this soon).
	cmd := exec.Command("true")
	err := cmd.Run()
	testenv.Need(t, err == nil, fmt.Sprint("cannot run true: ", err))
	if _, err := parsePIDFile("x.pid", []byte(fmt.Sprint(cmd.Process.Pid))); err == nil || !strings.Contains(err.Error(), "stale") {
		t.Errorf("a reaped process: %v", err)
	}
}

// A server that does not listen fails at once, as unreachable, and the
// message names the socket.
func TestOpenMySQLUnreachable(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "no.sock")
	for _, dsn := range []string{"root@unix(" + sock + ")/", "root@tcp(127.0.0.1:1)/"} {
		spec, err := ParseMySQLSpec(dsn, env("MYSQL_PWD", "Unr3achPw"))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		m, err := OpenMySQL(ctx, spec)
		cancel()
		if err == nil {
			_ = m.Close()
			t.Fatalf("%s: opened", dsn)
		}
		if d := time.Since(start); d > 6*time.Second {
			t.Errorf("%s: took %v", dsn, d)
		}
		if !errors.Is(err, ErrDatabaseUnreachable) || !strings.Contains(err.Error(), spec.cfg.Addr) ||
			strings.Contains(err.Error(), "Unr3achPw") {
			t.Errorf("%s: %v", dsn, err)
		}
	}
	if _, err := OpenMySQL(context.Background(), MySQLSpec{}); !errors.Is(err, ErrDatabaseSpec) {
		t.Errorf("an empty spec: %v", err)
	}
}

// Every source is read before any server is dialled: a system given
// twice (the default system, mysql, too) is refused then.
func TestParseMySQLSpecsRefusesSystemTwice(t *testing.T) {
	for _, args := range [][]string{
		{"erp=monitor@tcp(db1:3306)/", "erp=monitor@tcp(db2:3306)/"},
		{"monitor@tcp(db1:3306)/", "mysql=monitor@tcp(db2:3306)/"},
		{"erp=monitor@tcp(db1:3306)/", "erp=env:DSN"},
	} {
		_, err := ParseMySQLSpecs(args, env("DSN", "monitor@tcp(db3:3306)/"))
		if !errors.Is(err, ErrDatabaseSpec) || !strings.Contains(err.Error(), "given twice") {
			t.Errorf("%q: %v, want a system given twice", args, err)
		}
	}
	specs, err := ParseMySQLSpecs([]string{"erp=monitor@tcp(db1:3306)/", "web=monitor@tcp(db2:3306)/"}, env())
	if err != nil || len(specs) != 2 || specs[0].System != "erp" || specs[1].System != "web" {
		t.Errorf("two systems: %+v, %v", specs, err)
	}
}
