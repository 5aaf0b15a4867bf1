package sysfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Pressure is one resource's pressure stall information (PSI), as
// /proc/pressure/io and a cgroup v2's io.pressure give it: how long
// some, and all, of the non-idle tasks were stalled waiting on the
// resource.
type Pressure struct {
	Some PressureLine
	// Full is where every non-idle task was stalled at once; HasFull is
	// false where the file has no full line (the host's cpu file before
	// Linux 5.13; io always has one).
	Full    PressureLine
	HasFull bool
}

// PressureLine is one line of a pressure file: the kernel's running
// averages, in percent, and the cumulative stall time.
type PressureLine struct {
	Avg10, Avg60, Avg300 float64
	// TotalUS is the stall time since boot (or since the cgroup was
	// made), in microseconds: it only grows.
	TotalUS uint64
}

// ErrNoPressure reports that the kernel keeps no pressure where asked:
// the file is absent (PSI disabled at boot, a kernel before 4.20, a
// cgroup v1 hierarchy, a cgroup whose cgroup.pressure is 0) or refuses to
// be read (PSI compiled in but disabled). The cause stays reachable with
// errors.Is: os.ErrNotExist for an absent file.
var ErrNoPressure = errors.New("no pressure stall information")

// ParsePressure parses a pressure file: a "some" line and, usually, a
// "full" line, each "avg10=A avg60=B avg300=C total=T". Keys it does not
// know are ignored, so that a kernel adding one does not break readers;
// a line missing total, or of a kind other than some and full, is an
// error.
func ParsePressure(r io.Reader) (Pressure, error) {
	var p Pressure
	var some bool
	sc := newLineScanner(r)
	for lineNo := 1; sc.Scan(); lineNo++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		line, err := parsePressureLine(fields[1:])
		if err != nil {
			return Pressure{}, fmt.Errorf("parse pressure line %d: %w", lineNo, err)
		}
		switch fields[0] {
		case "some":
			p.Some, some = line, true
		case "full":
			p.Full, p.HasFull = line, true
		default:
			return Pressure{}, fmt.Errorf("parse pressure line %d: %q is neither some nor full", lineNo, fields[0])
		}
	}
	if err := sc.Err(); err != nil {
		return Pressure{}, fmt.Errorf("read pressure: %w", err)
	}
	if !some {
		return Pressure{}, errors.New("parse pressure: no some line")
	}
	return p, nil
}

func parsePressureLine(fields []string) (PressureLine, error) {
	var l PressureLine
	var total bool
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return l, fmt.Errorf("%q: want key=value", f)
		}
		var err error
		switch k {
		case "avg10":
			l.Avg10, err = strconv.ParseFloat(v, 64)
		case "avg60":
			l.Avg60, err = strconv.ParseFloat(v, 64)
		case "avg300":
			l.Avg300, err = strconv.ParseFloat(v, 64)
		case "total":
			l.TotalUS, err = strconv.ParseUint(v, 10, 64)
			total = true
		}
		if err != nil {
			return l, fmt.Errorf("%s: %w", k, err)
		}
	}
	if !total {
		return l, errors.New("no total")
	}
	return l, nil
}

// ReadPressure reads a pressure file: a cgroup's io.pressure, or one of
// /proc/pressure's. Where the kernel keeps none there, the error wraps
// ErrNoPressure.
func ReadPressure(path string) (Pressure, error) {
	p, err := parseFile(path, ParsePressure)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.EOPNOTSUPP) {
		return Pressure{}, fmt.Errorf("%w: %w", ErrNoPressure, err)
	}
	return p, err
}

// IOPressure is the whole host's I/O pressure, /proc/pressure/io.
func (fs FS) IOPressure() (Pressure, error) {
	return ReadPressure(filepath.Join(fs.proc, "pressure", "io"))
}
