// Package trace reads recorded block I/O traces: fio's iolog (versions 2
// and 3, what write_iolog writes), blktrace's binary records (the
// per-CPU files blktrace writes, or the one file `blkparse -d` dumps) and
// blkparse's text. Each reader is a pure parser over an io.Reader; ReadFile
// opens a trace by its name and says which file, line or record is at
// fault.
//
// A trace becomes the I/Os a replay issues: reads and writes, each with
// its offset, size and time since the first of them. What a replay does
// not issue (flushes and syncs, discards and trims, events with no data)
// is counted in Skipped, never dropped silently.
package trace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
)

// The formats a trace is read in (Trace.Format).
const (
	FormatIolog2   = "fio-iolog-v2"
	FormatIolog3   = "fio-iolog-v3"
	FormatBlktrace = "blktrace"
	FormatBlkparse = "blkparse"
)

// IO is one I/O of a trace.
type IO struct {
	// At is its start in ns after the first I/O of the trace.
	At     int64
	Offset int64 // bytes
	Size   int64 // bytes
	Write  bool
}

// Skipped counts what a trace holds that a replay does not issue.
type Skipped struct {
	// Flushes: blktrace's flushes (an empty flush, or the flush before a
	// write, whose data is replayed), fio's sync and datasync.
	Flushes uint64
	// Discards: blktrace's discards, fio's trims.
	Discards uint64
	// Empty: events of no data that are neither (blktrace's queue
	// events of zero bytes, fio's zero-length I/O).
	Empty uint64
}

// Total is every event skipped.
func (s Skipped) Total() uint64 { return s.Flushes + s.Discards + s.Empty }

// Trace is a recorded trace, ready to replay.
type Trace struct {
	Format string
	// Device is the device (blktrace: "MAJ:MIN") or file (fio) the I/Os
	// were on.
	Device string
	// IOs are the reads and writes to replay, by their start.
	IOs     []IO
	Skipped Skipped
	// Untimed: the trace records no times (a version 2 iolog without
	// waits): every I/O is due at once, as fio replays it.
	Untimed bool
}

// Options say which part of a trace to read.
type Options struct {
	// Device, when set, keeps only the I/Os of that device ("MAJ:MIN" or
	// "MAJ,MIN") or, in an iolog, that file; a trace of several devices
	// or files needs it.
	Device string
}

// MaxIOs bounds the I/Os of one trace (about 32 bytes each in memory).
const MaxIOs = 1 << 26

// MaxSize bounds one I/O of a trace: the engine's largest block (64 MiB).
const MaxSize = 64 << 20

// Error is a trace's bad input, at a line of a text format or a record of
// blktrace's binary one.
type Error struct {
	Line   int   // 1-based; 0 for a binary record
	Record int   // 1-based blktrace record; 0 for text
	Part   int   // the stream of the record: ReadBlktrace's readers, 0-based
	Offset int64 // the record's first byte
	Err    error
}

func (e *Error) Error() string {
	switch {
	case e.Line > 0:
		return fmt.Sprintf("line %d: %v", e.Line, e.Err)
	case e.Record > 0:
		return fmt.Sprintf("record %d (byte %d): %v", e.Record, e.Offset, e.Err)
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// DevicesError is a trace of several devices (or files) read without
// Options.Device.
type DevicesError struct{ Devices []string }

func (e *DevicesError) Error() string {
	return fmt.Sprintf("holds the I/O of %d devices or files (%s)", len(e.Devices), strings.Join(e.Devices, ", "))
}

// NoDeviceError is an Options.Device the trace does not hold.
type NoDeviceError struct {
	Device  string
	Devices []string
}

func (e *NoDeviceError) Error() string {
	if len(e.Devices) == 0 {
		return fmt.Sprintf("holds no I/O of %s: it holds none at all", e.Device)
	}
	return fmt.Sprintf("holds no I/O of %s (it holds %s)", e.Device, strings.Join(e.Devices, ", "))
}

// ErrUnknownFormat: the input is none of the formats read here.
var ErrUnknownFormat = errors.New("not a trace: neither fio's iolog (version 2 or 3), blktrace's binary records nor blkparse's text")

// Read reads one trace, of any format, telling the format from its start.
func Read(r io.Reader, o Options) (*Trace, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(64)
	switch {
	case isBlktrace(head):
		return ReadBlktrace([]io.Reader{br}, o)
	case bytes.HasPrefix(head, []byte(iolog2)), bytes.HasPrefix(head, []byte(iolog3)):
		return ReadIolog(br, o)
	case looksBlkparse(head):
		return ReadBlkparse(br, o)
	}
	return nil, ErrUnknownFormat
}

// event is an I/O as read, with the device it was on and its time in the
// trace's own clock.
type event struct {
	IO
	dev string
}

// collect builds a trace from the events read: the device chosen, the
// times from the first I/O on, the I/Os by their start.
func collect(format string, evs []event, skipped map[string]Skipped, o Options) (*Trace, error) {
	devs := map[string]bool{}
	for _, e := range evs {
		devs[e.dev] = true
	}
	for d := range skipped {
		devs[d] = true
	}
	names := make([]string, 0, len(devs))
	for d := range devs {
		names = append(names, d)
	}
	sort.Strings(names)
	want := o.Device
	switch {
	case want != "":
		want = normalDevice(want)
		if !devs[want] {
			return nil, &NoDeviceError{Device: o.Device, Devices: names}
		}
	case len(names) > 1:
		return nil, &DevicesError{Devices: names}
	case len(names) == 1:
		want = names[0]
	}
	t := &Trace{Format: format, Device: want, Skipped: skipped[want]}
	for _, e := range evs {
		if e.dev == want {
			t.IOs = append(t.IOs, e.IO)
		}
	}
	slices.SortStableFunc(t.IOs, func(a, b IO) int {
		switch {
		case a.At < b.At:
			return -1
		case a.At > b.At:
			return 1
		}
		return 0
	})
	if len(t.IOs) > 0 {
		first := t.IOs[0].At
		for i := range t.IOs {
			t.IOs[i].At -= first
		}
	}
	return t, nil
}

// normalDevice spells a device "MAJ:MIN" whichever way it was written
// ("MAJ,MIN" as blkparse does); a file's name is kept.
func normalDevice(d string) string {
	if maj, min, ok := strings.Cut(d, ","); ok && isDigits(maj) && isDigits(min) {
		return maj + ":" + min
	}
	return d
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Span is the time from the first I/O's start to the last's.
func (t *Trace) Span() int64 {
	if len(t.IOs) == 0 {
		return 0
	}
	return t.IOs[len(t.IOs)-1].At
}

// Reads counts the trace's reads.
func (t *Trace) Reads() (n uint64) {
	for i := range t.IOs {
		if !t.IOs[i].Write {
			n++
		}
	}
	return n
}

// Writes tells whether the trace writes.
func (t *Trace) Writes() bool { return uint64(len(t.IOs)) > t.Reads() }

// MaxSize is the size of the trace's largest I/O.
func (t *Trace) MaxSize() int64 {
	var m int64
	for i := range t.IOs {
		m = max(m, t.IOs[i].Size)
	}
	return m
}

// PerSecond counts the I/Os that start in each second of the trace, its
// clock divided by speed (2: twice as fast).
func (t *Trace) PerSecond(speed float64) []uint64 {
	if len(t.IOs) == 0 {
		return nil
	}
	n := make([]uint64, Scale(t.Span(), speed)/1e9+1)
	for i := range t.IOs {
		n[Scale(t.IOs[i].At, speed)/1e9]++
	}
	return n
}

// Scale is a time of the trace (ns) replayed at speed (2: twice as fast).
func Scale(at int64, speed float64) int64 {
	if speed == 1 {
		return at
	}
	return int64(float64(at) / speed)
}
