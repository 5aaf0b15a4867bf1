package main

import (
	"context"

	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/observe"
)

// openDatabases opens every --mysql source before sampling starts.
func openDatabases(ctx context.Context, o *observeOptions, ctrl cgroup.Controller) ([]observe.DatabaseSource, error) {
	if len(o.MySQL) > 0 {
		return nil, usagef("--mysql: not built yet")
	}
	return nil, nil
}
