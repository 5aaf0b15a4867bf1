package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/iomatrix/iomatrix/answers/iocost"
	"github.com/iomatrix/iomatrix/answers/isolate"
	"github.com/iomatrix/iomatrix/cgroup"
	"github.com/iomatrix/iomatrix/results"
)

// parseWeights reads --weight: victim=W1,aggressor=W2, each 1–10000; a
// key left out keeps its default.
func parseWeights(s string) (victim, aggressor int, err error) {
	victim, aggressor = 500, 100
	seen := map[string]bool{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return 0, 0, usagef("--weight: %q is not KEY=WEIGHT (victim=500,aggressor=100)", kv)
		}
		w, err := strconv.Atoi(v)
		if err != nil || w < cgroup.MinWeight || w > cgroup.MaxWeight {
			return 0, 0, usagef("--weight: %s=%s: a weight is a whole number from %d to %d", k, v, cgroup.MinWeight, cgroup.MaxWeight)
		}
		if seen[k] {
			return 0, 0, usagef("--weight: %s given twice", k)
		}
		seen[k] = true
		switch k {
		case "victim":
			victim = w
		case "aggressor":
			aggressor = w
		default:
			return 0, 0, usagef("--weight: %q is not victim or aggressor", k)
		}
	}
	return victim, aggressor, nil
}

// runIsolateIOCost is isolate --control iocost (isolate.RunIOCost): the
// victim and the aggressor in sibling cgroups at their io.weight, with
// iocost as set up on the target's disk (iocost apply), switched off for
// the uncontrolled and io.max phases and left as found.
func runIsolateIOCost(ctx context.Context, g *globalOptions, o *isolateOptions, target string) error {
	switch {
	case o.Cgroup != "":
		return usagef("--cgroup: isolate puts the victim and the aggressor in fresh cgroups of their own")
	case o.IOMaxTries < 1 || o.IOMaxTries > 20:
		return usagef("--iomax-tries: %d: give 1 to 20 phases", o.IOMaxTries)
	}
	in, err := o.common(g)
	if err != nil {
		return err
	}
	minIso, victim, aggressor, opts, size := in.minIso, in.victim, in.aggressor, in.opts, in.size
	vw, aw, err := parseWeights(o.Weight)
	if err != nil {
		return err
	}
	var cmpCap *cgroup.Limit
	if o.Cap != "" {
		if cmpCap, err = parseCapFlag(o.Cap); err != nil {
			return err
		}
	}
	// The device's iocost, checked before any I/O: a file that does not
	// exist yet lives on its directory's disk.
	where := target
	if _, err := os.Stat(where); errors.Is(err, os.ErrNotExist) {
		where = filepath.Dir(target)
	}
	h, dev, _, err := o.iocost.host(where)
	if err != nil {
		return err
	}
	if err := h.Check(dev); err != nil {
		return iocostError(err)
	}
	on, qos, err := h.Enabled(dev)
	if err != nil {
		return iocostError(fmt.Errorf("%w: %w", iocost.ErrUnusable, err))
	}
	if !on {
		return usagef("--control iocost: iocost is not enabled on %s (io.cost.qos: %s): set it up first, from a sweep of the iocost profile: iomatrix iocost apply %s --from RESULTS.json",
			dev, orNone(qos), target)
	}
	model, _, err := h.Lines(dev)
	if err != nil {
		return iocostError(fmt.Errorf("%w: %w", iocost.ErrUnusable, err))
	}
	// Both run in cgroups of their own, without limits: the session's
	// is the aggressor's, the victim's is made beside it.
	o.Cap, o.capOptions.limit = "", &cgroup.Limit{}
	plan, cp, err := o.resolve(g, target, size, []results.Pattern{victim, aggressor}, false, &opts)
	if err != nil {
		return err
	}
	if cp.Device().String() != dev {
		g.notice(fmt.Sprintf("the cgroups' device is %s, iocost's %s (the disk)", cp.Device(), dev))
	}
	sess, err := startSession(ctx, g, &o.measureOptions, cp, plan, results.AnyWrites([]results.Pattern{victim, aggressor}))
	if err != nil {
		return err
	}
	defer sess.Close()
	victimM, err := sess.AddMember()
	if err != nil {
		return err
	}
	// iocost is switched off and on between phases; whatever happens,
	// the line ends as it was found.
	defer func() {
		if rerr := h.SetEnabled(dev, true, qos); rerr != nil {
			g.notice(fmt.Sprintf("warning: io.cost.qos of %s not restored to %q: %v", dev, qos, rerr))
		}
	}()
	frame := results.IsolateReport{Tool: results.Tool{Name: "iomatrix", Version: results.Version}, Host: results.HostInfo(),
		Target: sess.Target().Info, RuntimeNS: int64(opts.Runtime), RampNS: int64(opts.Ramp), Engine: opts.Engine,
		Seed: opts.Seed, StartedAt: time.Now().UTC().Format(time.RFC3339)}
	rep, err := isolate.RunIOCost(ctx, isolate.IOCostConfig{Victim: victim, Aggressor: aggressor, Options: opts, MinIsolation: minIso,
		VictimM: victimM, AggressorM: sess.Member(), VictimWeight: vw, AggressorWeight: aw,
		Enable: func(on bool) error { return h.SetEnabled(dev, on, qos) },
		Controller: func() (float64, uint64, uint64, bool, error) {
			st, ok, err := h.Stat(dev, victimM.Path(), sess.Member().Path())
			if err != nil || !ok {
				return 0, 0, 0, false, err
			}
			return st.VRatePct, st.UsageUS[0], st.UsageUS[1], true, nil
		},
		Cap: cmpCap, Searches: o.IOMaxTries, Report: frame, Notice: g.notice,
		Info: results.IsolateIOCost{Device: dev, Model: model, QoS: qos}})
	if err != nil {
		return err
	}
	return writeIsolate(g, o.Format, rep)
}
