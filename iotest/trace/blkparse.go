package trace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// blkparse's text, in its default format: one event a line,
//
//	MAJ,MIN CPU SEQUENCE SECONDS.NANOSECONDS PID ACTION RWBS [SECTOR + SECTORS] [PROCESS]
//
// then a summary per CPU and in total, which is skipped. As from the
// binary records, the queue events (Q) are the I/Os; RWBS says what each
// is: R read, W write, D discard, N no data, F a flush (leading: a flush
// before the I/O; alone: the flush itself), then F (FUA), A, S, M.

// looksBlkparse tells whether head starts with a blkparse event line.
func looksBlkparse(head []byte) bool {
	line, _, _ := bytes.Cut(bytes.TrimLeft(head, " \t\r\n"), []byte("\n"))
	f := strings.Fields(string(line))
	return len(f) > 0 && isDevice(f[0])
}

// isDevice tells whether s is blkparse's MAJ,MIN.
func isDevice(s string) bool {
	maj, min, ok := strings.Cut(s, ",")
	return ok && isDigits(maj) && isDigits(min)
}

// ReadBlkparse reads blkparse's text.
func ReadBlkparse(r io.Reader, o Options) (*Trace, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	b := blkReader{skipped: map[string]Skipped{}}
	line, summary := 0, false
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 0:
			continue
		case isDevice(f[0]):
			if summary {
				return nil, &Error{Line: line, Err: errors.New("an event after blkparse's summary")}
			}
			if err := b.textEvent(f); err != nil {
				return nil, &Error{Line: line, Err: err}
			}
		case strings.HasPrefix(f[0], "CPU") || f[0] == "Total":
			summary = true // blkparse's summary: per CPU, then in total
		case !summary:
			return nil, &Error{Line: line, Err: fmt.Errorf("%q is not a blkparse event (MAJ,MIN CPU SEQUENCE TIME PID ACTION RWBS ...)", sc.Text())}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = errors.New("line longer than 64 KiB")
		}
		return nil, &Error{Line: line + 1, Err: err}
	}
	return collect(FormatBlkparse, b.evs, b.skipped, o)
}

// textEvent takes one event line, split into fields.
func (b *blkReader) textEvent(f []string) error {
	if len(f) < 7 {
		return errors.New("an event needs MAJ,MIN CPU SEQUENCE TIME PID ACTION RWBS")
	}
	if f[5] != "Q" {
		return nil
	}
	at, err := parseTime(f[3])
	if err != nil {
		return err
	}
	op, flush, ok := parseRWBS(f[6])
	if !ok {
		return fmt.Errorf("%q is not blkparse's RWBS", f[6])
	}
	io := IO{At: at, Write: op == 'W'}
	if len(f) >= 10 && f[8] == "+" {
		sector, err1 := strconv.ParseUint(f[7], 10, 64)
		n, err2 := strconv.ParseUint(f[9], 10, 32)
		if err1 != nil || err2 != nil || sector > math.MaxInt64/sectorBytes {
			return fmt.Errorf("%s + %s is not SECTOR + SECTORS", f[7], f[9])
		}
		io.Offset, io.Size = int64(sector)*sectorBytes, int64(n)*sectorBytes
	}
	if op == 'N' {
		io.Size = 0
	}
	return b.take(normalDevice(f[0]), io, flush || op == 'F', op == 'D')
}

// parseTime reads blkparse's SECONDS.NANOSECONDS.
func parseTime(s string) (int64, error) {
	sec, frac, _ := strings.Cut(s, ".")
	secs, err1 := strconv.ParseUint(sec, 10, 32)
	ns, err2 := strconv.ParseUint(frac+strings.Repeat("0", max(0, 9-len(frac))), 10, 64)
	if err1 != nil || err2 != nil || len(frac) > 9 {
		return 0, fmt.Errorf("%q is not a time in seconds (S.NNNNNNNNN)", s)
	}
	return int64(secs)*1e9 + int64(ns), nil
}

// parseRWBS reads the operation of an RWBS field (R, W, D, N, or F for a
// flush) and whether a flush came before it.
func parseRWBS(s string) (op byte, preflush, ok bool) {
	if s == "" {
		return 0, false, false
	}
	if len(s) > 1 && s[0] == 'F' && strings.IndexByte("WRDNF", s[1]) >= 0 {
		preflush, s = true, s[1:]
	}
	if strings.IndexByte("WRDNF", s[0]) < 0 {
		return 0, false, false
	}
	return s[0], preflush, true
}
