package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/iomatrix/iomatrix/answers/observe"
	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/internal/sysfs"
)

// openDatabases opens every --mysql source before sampling starts, so
// that a bad DSN, a wrong password or a server that is down ends observe
// at once with one line (never the password). A server on this host has
// its cgroup found from its pid, and its system is observed through it.
func openDatabases(ctx context.Context, o *observeOptions, ctrl cgroup.Controller) ([]observe.DatabaseSource, error) {
	var out []observe.DatabaseSource
	fail := func(err error) ([]observe.DatabaseSource, error) {
		for _, d := range out {
			_ = d.DB.Close() // read-only connections: nothing to lose
		}
		return nil, err
	}
	for _, arg := range o.MySQL {
		spec, err := observe.ParseMySQLSpec(arg, os.LookupEnv)
		if err != nil {
			return fail(usagef("--mysql: %w", err))
		}
		db, err := observe.OpenMySQL(ctx, spec)
		switch {
		case errors.Is(err, observe.ErrDatabaseSpec), errors.Is(err, observe.ErrDatabaseUnsupported):
			return fail(usagef("--mysql %s: %w", spec.System, err))
		case err != nil:
			return fail(fmt.Errorf("--mysql %s: %w", spec.System, err))
		}
		src := observe.DatabaseSource{System: spec.System, DB: db}
		src.Cgroup = serverCgroup(ctx, db, ctrl, o.ProcFS)
		out = append(out, src)
	}
	return out, nil
}

// serverCgroup is the cgroup of a server running on this host, in the
// I/O controller's hierarchy; "" when it cannot be told.
func serverCgroup(ctx context.Context, db *observe.MySQL, ctrl cgroup.Controller, proc string) string {
	if ctrl.Version == 0 {
		return ""
	}
	pid, err := db.ServerPID(ctx)
	if err != nil {
		return ""
	}
	entries, err := sysfs.NewFS("/sys", proc).Cgroups(pid)
	if err != nil {
		return ""
	}
	for _, e := range entries {
		v2 := e.ID == 0 && len(e.Controllers) == 0
		if (ctrl.Version == 2 && v2) || (ctrl.Version == 1 && slices.Contains(e.Controllers, "blkio")) {
			if _, err := os.Stat(filepath.Join(ctrl.Dir, e.Path)); err == nil && strings.HasPrefix(e.Path, "/") {
				return e.Path
			}
		}
	}
	return ""
}
