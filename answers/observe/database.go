package observe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
)

// A Database is a database server read for its own view of its I/O:
// counters that only grow while the server runs, and its uptime, so that
// a restart (after which InnoDB's counters start again from zero, and
// PostgreSQL's go on or, after a crash, start again) is told from a
// quiet spell.
type Database interface {
	// Kind names the server's protocol: "mysql" or "postgres". It is
	// the series' kind in the document, and picks the counters and
	// figures the series keeps (dbKinds).
	Kind() string
	// Status reads the counters, by the names of the kind's counters
	// (DatabaseCounters, PostgresCounters).
	Status(ctx context.Context) (DBStatus, error)
	Close() error
}

// DBStatus is one reading of a database's counters.
type DBStatus struct {
	Counters map[string]uint64
	// UptimeS is the server's uptime in seconds: less than at the last
	// reading means it restarted.
	UptimeS uint64
	// Queries, when the server reports it (0 otherwise), is a count that
	// grows at every reading while the server runs: less than at the last
	// reading means it restarted, to the reading, not to the second.
	Queries uint64
	// Sessions, when the server reports it (0 otherwise), is how many
	// client sessions were connected at the reading, the observer's own
	// left out: each waits for one I/O at a time, its own read, at most.
	Sessions int
	// Epoch, when the server reports one ("" otherwise), changes
	// whenever its counters were reset or started again (a statistics
	// reset, a restart), whether or not they went back.
	Epoch string
}

// OpenDatabases opens every database source, MySQL's (ParseMySQLSpec)
// and PostgreSQL's (ParsePostgresSpec), before sampling starts, so that
// a bad source, a wrong password or a server that is down ends the
// observation at once with one line (never the password): bad input is
// a fault.InputError naming the option (mysql or postgres), a server
// that cannot be reached or read an error naming the option and the
// system. Every source is read before any server is dialled; a system
// given two servers, of one kind or of two, is refused, as its figures
// would be two servers' in one. A server on this host has its cgroup
// found from its pid (in c.FS's procfs), and its system is observed
// through it. getenv is os.LookupEnv in production.
func (c *Config) OpenDatabases(ctx context.Context, mysql, postgres []string, getenv func(string) (string, bool)) error {
	mspecs, err := ParseMySQLSpecs(mysql, getenv)
	if err != nil {
		return fault.Input("mysql", "%w", err)
	}
	pspecs, err := ParsePostgresSpecs(postgres, getenv)
	if err != nil {
		return fault.Input("postgres", "%w", err)
	}
	var opens []databaseOpen
	for _, s := range mspecs {
		opens = append(opens, databaseOpen{"mysql", s.System, func(ctx context.Context) (Database, error) { return OpenMySQL(ctx, s) }})
	}
	for _, s := range pspecs {
		if slices.ContainsFunc(mspecs, func(m MySQLSpec) bool { return m.System == s.System }) {
			return fault.Input("postgres", "%w: system %s given twice, a MySQL server's too (name each server's system: SYSTEM=SOURCE)", ErrDatabaseSpec, s.System)
		}
		opens = append(opens, databaseOpen{"postgres", s.System, func(ctx context.Context) (Database, error) { return OpenPostgres(ctx, s) }})
	}
	for _, o := range opens {
		db, err := o.open(ctx)
		if err != nil {
			c.CloseDatabases()
			if errors.Is(err, ErrDatabaseSpec) || errors.Is(err, ErrDatabaseUnsupported) {
				return fault.AsInput(&sourceError{o.option, o.system, err})
			}
			return &sourceError{o.option, o.system, err}
		}
		c.Databases = append(c.Databases, DatabaseSource{System: o.system, DB: db, Cgroup: c.serverCgroup(ctx, db)})
	}
	return nil
}

// databaseOpen is a source read, to be dialled.
type databaseOpen struct {
	option, system string
	open           func(context.Context) (Database, error)
}

// ParseMySQLSpecs reads every MySQL source (ParseMySQLSpec) before any
// is dialled: a system given two servers is refused, as its figures
// would be two servers' in one.
func ParseMySQLSpecs(sources []string, getenv func(string) (string, bool)) ([]MySQLSpec, error) {
	return parseSpecs(sources, getenv, ParseMySQLSpec, func(s MySQLSpec) string { return s.System })
}

// parseSpecs reads every source with parse, refusing a system given
// twice.
func parseSpecs[S any](sources []string, getenv func(string) (string, bool), parse func(string, func(string) (string, bool)) (S, error), system func(S) string) ([]S, error) {
	var specs []S
	for _, arg := range sources {
		spec, err := parse(arg, getenv)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(specs, func(s S) bool { return system(s) == system(spec) }) {
			return nil, fmt.Errorf("%w: system %s given twice (name each server's system: SYSTEM=SOURCE)", ErrDatabaseSpec, system(spec))
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

// sourceSyntax is how one kind of database source is written: the
// default system, what its connection string is called and looks like,
// and which prefixes before a '=' belong to the connection string
// rather than naming a system.
type sourceSyntax struct {
	system, what, example string
	keyword               func(string) bool
}

// readSource splits a database source as a user writes it,
// [SYSTEM=]SOURCE, and reads the connection string SOURCE names: that
// of the environment variable VAR (env:VAR), the first line of a file
// private to its owner (file:PATH), or SOURCE itself. from says where it
// came from ("env:VAR", "file:PATH" or commandLine), for messages. The
// errors wrap ErrDatabaseSpec and never quote the connection string.
func readSource(arg string, syn sourceSyntax, getenv func(string) (string, bool)) (system, dsn, from string, err error) {
	system, source := syn.system, arg
	// A connection string's parameters and password may hold '=' too,
	// but never behind a prefix made of name characters only, unless
	// the prefix is one of the string's keywords: such a prefix is the
	// system.
	if i := strings.IndexByte(arg, '='); i >= 0 && systemName.MatchString(arg[:i]) && (syn.keyword == nil || !syn.keyword(arg[:i])) {
		system, source = arg[:i], arg[i+1:]
	} else if i == 0 {
		return "", "", "", fmt.Errorf("%w: empty system name before '='", ErrDatabaseSpec)
	}
	switch {
	case strings.HasPrefix(source, "env:"):
		name := strings.TrimPrefix(source, "env:")
		v, ok := getenv(name)
		if name == "" || !ok {
			return "", "", "", fmt.Errorf("%w: %s: the environment variable %q is not set", ErrDatabaseSpec, source, name)
		}
		if dsn = strings.TrimSpace(v); dsn == "" {
			return "", "", "", fmt.Errorf("%w: %s: the environment variable %q is empty", ErrDatabaseSpec, source, name)
		}
		return system, dsn, source, nil
	case strings.HasPrefix(source, "file:"):
		if dsn, err = readDSNFile(strings.TrimPrefix(source, "file:")); err != nil {
			return "", "", "", fmt.Errorf("%w: %s: %w", ErrDatabaseSpec, source, err)
		}
		return system, dsn, source, nil
	}
	if strings.TrimSpace(source) == "" {
		// A driver reads an empty connection string as its defaults: a
		// server nobody named.
		return "", "", "", fmt.Errorf("%w: %q: no %s after the system's name (give [SYSTEM=]env:VAR, [SYSTEM=]file:PATH or %s)", ErrDatabaseSpec, arg, syn.what, syn.example)
	}
	return system, source, commandLine, nil
}

// CloseDatabases closes the databases' connections and forgets them.
func (c *Config) CloseDatabases() {
	for _, d := range c.Databases {
		_ = d.DB.Close() // read-only connections: nothing to lose
	}
	c.Databases = nil
}

// A localServer is a database that can tell whether its server runs on
// this host, and its process id there.
type localServer interface {
	hostPID(ctx context.Context, proc sysfs.FS) (int, error)
}

// serverCgroup is the cgroup of a server running on this host, in the
// I/O controller's hierarchy; "" when it cannot be told.
func (c *Config) serverCgroup(ctx context.Context, db Database) string {
	local, ok := db.(localServer)
	if c.Ctrl.Version == 0 || !ok {
		return ""
	}
	pid, err := local.hostPID(ctx, c.FS)
	if err != nil {
		return ""
	}
	entries, err := c.FS.Cgroups(pid)
	if err != nil {
		return ""
	}
	for _, e := range entries {
		v2 := e.ID == 0 && len(e.Controllers) == 0
		if (c.Ctrl.Version == 2 && v2) || (c.Ctrl.Version == 1 && slices.Contains(e.Controllers, "blkio")) {
			if _, err := os.Stat(filepath.Join(c.Ctrl.Dir, e.Path)); err == nil && strings.HasPrefix(e.Path, "/") {
				return e.Path
			}
		}
	}
	return ""
}
