package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/iotest"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/profiles"
	"github.com/iomatrix/iomatrix/results"
)

// DefaultMergesState is the directory of the nomerges values a sweep has
// to put back, one file per disk: /run is emptied at boot, as the
// kernel's queue settings are.
const DefaultMergesState = "/run/iomatrix"

// nomergesAttr is the queue attribute a profile's nomerges: key sets.
const nomergesAttr = "nomerges"

// MergesRequest asks what a sweep does to the request merging of its
// target's disk.
type MergesRequest struct {
	Sys     sysfs.FS
	Plan    *target.Plan
	Profile *profiles.Profile
	// Keep leaves the disk's merging as it is; each cell that asked for a
	// setting records the disk's own.
	Keep bool
	// StateDir holds the values to put back (DefaultMergesState).
	StateDir string
	Notice   func(string)
}

// Merges sets the nomerges of a disk's queue around each cell whose
// profile asks for it (profiles.Profile.NomergesOf), in this process,
// whether the cell runs here or in the capped child, and puts the
// disk's own value back after the cell, on error and on interruption
// too, unless somebody else changed it meanwhile. Before it sets a
// value, it saves the one to put back in a state file, so that after a
// SIGKILL the next sweep on the disk puts it back first.
type Merges struct {
	sys      sysfs.FS
	disk     string
	profile  *profiles.Profile
	keep     bool
	stateDir string
	notice   func(string)
}

// PlanMerges decides, touching nothing, what a sweep does to its disk's
// request merging: nil when the profile asks for no setting, or when the
// target has no block queue (told to Notice); a refusal when this
// process may not write the disk's setting (a fault.PrivilegeError
// without root), which names the way to keep merges as they are.
func PlanMerges(r MergesRequest) (*Merges, error) {
	if r.Profile == nil || len(r.Profile.Nomerges) == 0 {
		return nil, nil
	}
	notice := r.Notice
	if notice == nil {
		notice = func(string) {}
	}
	info := r.Plan.Info
	switch {
	case info.Kind == target.KindPassthrough:
		notice(fmt.Sprintf("%s: passthrough commands bypass the block layer, which merges requests: the profile's nomerges settings change nothing there, and are not made", info.Path))
		return nil, nil
	case info.Disk == "":
		notice(fmt.Sprintf("%s is on no block device, which would merge requests: the profile's nomerges settings are not made", info.Path))
		return nil, nil
	}
	m := &Merges{sys: r.Sys, disk: info.Disk, profile: r.Profile, keep: r.Keep, stateDir: r.StateDir, notice: notice}
	if r.Keep {
		return m, nil
	}
	file, err := r.Sys.CheckQueueAttrWritable(info.Disk, nomergesAttr)
	if err == nil {
		return m, nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is said once
	}
	keep := fault.NewMention(func(n fault.Namer) string {
		return "the profile's marked cells run with the disk's request merging off, as the kernel's procedure measures them; or keep merging as it is with " + n("keep-merges")
	})
	// A read-only /sys is a container's without the privilege to write it.
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, unix.EROFS) {
		return nil, fault.Privilege("cannot set %s: %w: it needs root, and /sys writable (%w)", file, err, keep)
	}
	return nil, fmt.Errorf("cannot set %s: %w (%w)", file, err, keep)
}

// Wrap is r with the disk's nomerges set around each cell that asks for
// it; m nil is r itself.
func (m *Merges) Wrap(r Runner) Runner {
	if m == nil {
		return r
	}
	return mergesRunner{m: m, inner: r}
}

type mergesRunner struct {
	m     *Merges
	inner Runner
}

func (w mergesRunner) Run(ctx context.Context, p results.Pattern, o iotest.Options) (results.Result, error) {
	asked, ok := w.m.profile.NomergesOf(p)
	if !ok {
		return w.inner.Run(ctx, p, o)
	}
	if w.m.keep {
		res, err := w.inner.Run(ctx, p, o)
		if v, _, rerr := w.m.value(); rerr == nil && res.Name != "" {
			res.Nomerges = &results.Nomerges{Disk: w.m.disk, Asked: asked, Value: v, Kept: true}
		}
		return res, err
	}
	st, err := w.m.set(asked)
	if err != nil {
		return results.Result{}, err
	}
	// Deferred: a panic below still puts the disk's value back.
	defer w.m.restore(st)
	res, err := w.inner.Run(ctx, p, o)
	if res.Name != "" {
		res.Nomerges = &results.Nomerges{Disk: w.m.disk, Asked: asked, Value: st.Set}
	}
	return res, err
}
