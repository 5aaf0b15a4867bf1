package trace

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// fio's iolog, as fio 3.33 reads it (iolog.c, read_iolog) and its
// documentation describes it (HOWTO, "Trace file format"). The first line
// names the version; every other line is an action on a file:
//
//	version 2:              FILE ACTION [OFFSET LENGTH]
//	version 3:  TIMESTAMP   FILE ACTION [OFFSET LENGTH]
//
// ACTION is add, open or close (no offset), or read, write, sync,
// datasync or trim (offset and length in bytes); version 2 also has
// wait. Version 3's timestamp is in microseconds from the start of the
// run: what write_iolog writes (utime_since_now) and what replay waits
// on (iolog_delay), though the documentation names no unit. Version 2's
// wait is documented as microseconds after the previous wait, waits
// under 100 µs discarded; that is the meaning read here (fio 3.33's code
// compares it with milliseconds since the start instead, and needs a
// fourth field on the line; both spellings are read). A version 2 log
// without waits has no times: every I/O is due at once.

const (
	iolog2 = "fio version 2 iolog"
	iolog3 = "fio version 3 iolog"
)

// minWait: fio's documentation discards shorter waits.
const minWait = 100

// ReadIolog reads fio's iolog, version 2 or 3.
func ReadIolog(r io.Reader, o Options) (*Trace, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, &Error{Line: 1, Err: err}
		}
		return nil, ErrUnknownFormat
	}
	v3 := false
	switch head := strings.TrimSpace(sc.Text()); head {
	case iolog2:
	case iolog3:
		v3 = true
	default:
		return nil, &Error{Line: 1, Err: fmt.Errorf("%q is not fio's iolog header (%q or %q)", head, iolog2, iolog3)}
	}
	p := iologParser{v3: v3, skipped: map[string]Skipped{}}
	line := 1
	for sc.Scan() {
		line++
		if err := p.line(sc.Text()); err != nil {
			return nil, &Error{Line: line, Err: err}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = errors.New("line longer than 64 KiB")
		}
		return nil, &Error{Line: line + 1, Err: err}
	}
	format := FormatIolog2
	if v3 {
		format = FormatIolog3
	}
	t, err := collect(format, p.evs, p.skipped, o)
	if err != nil {
		return nil, err
	}
	t.Untimed = !v3 && !p.waited
	return t, nil
}

type iologParser struct {
	v3      bool
	clock   int64 // version 2: the sum of the waits so far, ns
	waited  bool
	evs     []event
	skipped map[string]Skipped
}

// line reads one line of the log after its header.
func (p *iologParser) line(text string) error {
	f := strings.Fields(text)
	if len(f) == 0 {
		return nil
	}
	at := p.clock
	if p.v3 {
		ts, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || ts > math.MaxInt64/1000 {
			return fmt.Errorf("%q is not a timestamp in microseconds", f[0])
		}
		at, f = int64(ts)*1000, f[1:]
	}
	if len(f) < 2 {
		return fmt.Errorf("%q: not FILE ACTION [OFFSET LENGTH]", text)
	}
	file, act := f[0], f[1]
	switch act {
	case "add", "open", "close":
		if len(f) != 2 {
			return fmt.Errorf("%s takes no offset or length", act)
		}
		return nil
	case "wait":
		return p.wait(f)
	case "read", "write", "sync", "datasync", "trim":
	default:
		return fmt.Errorf("%q is not an action of fio's iolog (add, open, close, read, write, sync, datasync, trim, wait)", act)
	}
	if len(f) != 4 {
		return fmt.Errorf("%s needs an offset and a length", act)
	}
	off, err := strconv.ParseUint(f[2], 10, 63)
	if err != nil {
		return fmt.Errorf("offset %q is not a number of bytes", f[2])
	}
	size, err := strconv.ParseUint(f[3], 10, 32)
	if err != nil {
		return fmt.Errorf("length %q is not a number of bytes (fio's are below 4 GiB)", f[3])
	}
	s := p.skipped[file]
	switch {
	case act == "sync" || act == "datasync":
		s.Flushes++
	case act == "trim":
		s.Discards++
	case size == 0:
		s.Empty++
	case size > MaxSize:
		return fmt.Errorf("%s of %d bytes: more than the largest I/O replayed, %d MiB", act, size, MaxSize>>20)
	default:
		if len(p.evs) >= MaxIOs {
			return fmt.Errorf("more than %d I/Os", MaxIOs)
		}
		p.evs = append(p.evs, event{IO: IO{At: at, Offset: int64(off), Size: int64(size), Write: act == "write"}, dev: file})
		return nil
	}
	p.skipped[file] = s
	return nil
}

// wait reads version 2's wait: FILE wait USEC [ANY].
func (p *iologParser) wait(f []string) error {
	if p.v3 {
		return errors.New("version 3 has no wait: its timestamps time the I/O")
	}
	if len(f) != 3 && len(f) != 4 {
		return errors.New("wait takes one number, microseconds")
	}
	us, err := strconv.ParseUint(f[2], 10, 64)
	if err != nil || us > math.MaxInt64/1000 || p.clock > math.MaxInt64-int64(us)*1000 {
		return fmt.Errorf("wait %q is not a number of microseconds", f[2])
	}
	p.waited = true
	if us >= minWait {
		p.clock += int64(us) * 1000
	}
	return nil
}
