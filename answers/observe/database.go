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
)

// A Database is a database server read for its own view of its I/O:
// counters that only grow while the server runs, and its uptime, so that
// a restart (the counters start again from zero) is told from a quiet
// spell.
type Database interface {
	// Kind names the server's protocol: "mysql".
	Kind() string
	// Status reads the counters, by the names of DatabaseCounters.
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
}

// OpenDatabases opens every MySQL source (ParseMySQLSpec) before
// sampling starts, so that a bad source, a wrong password or a server
// that is down ends the observation at once with one line (never the
// password): bad input is a fault.InputError, a server that cannot be
// reached or read an error naming the option and the system. A server
// on this host has its cgroup found from its pid (in c.FS's procfs), and
// its system is observed through it. getenv is os.LookupEnv in
// production.
func (c *Config) OpenDatabases(ctx context.Context, sources []string, getenv func(string) (string, bool)) error {
	specs, err := ParseMySQLSpecs(sources, getenv)
	if err != nil {
		return fault.Input("mysql", "%w", err)
	}
	for _, spec := range specs {
		db, err := OpenMySQL(ctx, spec)
		if err != nil {
			c.CloseDatabases()
			if errors.Is(err, ErrDatabaseSpec) || errors.Is(err, ErrDatabaseUnsupported) {
				return fault.AsInput(&sourceError{"mysql", spec.System, err})
			}
			return &sourceError{"mysql", spec.System, err}
		}
		c.Databases = append(c.Databases, DatabaseSource{System: spec.System, DB: db, Cgroup: c.serverCgroup(ctx, db)})
	}
	return nil
}

// ParseMySQLSpecs reads every MySQL source (ParseMySQLSpec) before any
// is dialled: a system given two servers is refused, as its figures
// would be two servers' in one.
func ParseMySQLSpecs(sources []string, getenv func(string) (string, bool)) ([]MySQLSpec, error) {
	var specs []MySQLSpec
	for _, arg := range sources {
		spec, err := ParseMySQLSpec(arg, getenv)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(specs, func(s MySQLSpec) bool { return s.System == spec.System }) {
			return nil, fmt.Errorf("%w: system %s given twice (name each server's system: SYSTEM=SOURCE)", ErrDatabaseSpec, spec.System)
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

// CloseDatabases closes the databases' connections and forgets them.
func (c *Config) CloseDatabases() {
	for _, d := range c.Databases {
		_ = d.DB.Close() // read-only connections: nothing to lose
	}
	c.Databases = nil
}

// serverCgroup is the cgroup of a server running on this host, in the
// I/O controller's hierarchy; "" when it cannot be told.
func (c *Config) serverCgroup(ctx context.Context, db *MySQL) string {
	if c.Ctrl.Version == 0 {
		return ""
	}
	pid, err := db.ServerPID(ctx)
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
