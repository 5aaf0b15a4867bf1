package trace

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// blktrace's binary records (linux/blktrace_api.h): each a 48-byte
// struct blk_io_trace in the byte order of the machine that recorded
// it, followed by pdu_len bytes of payload. blktrace writes one file per
// CPU (DEV.blktrace.N); `blkparse -d` dumps them merged into one file, as
// fio's read_iolog wants them. The kernel's own tracer writes the same
// records (the blk tracer of tracefs, with its bin option set and its
// context-info option cleared).
//
// As fio does, a replay takes the queue events (Q): an I/O as it was
// asked of the block layer, before the layer merged or split it. The
// other events (G, I, D, C, merges, plugs) describe what the block layer
// did with it and are not I/Os of their own; notify records (process
// names, timestamps, messages) are skipped.

const (
	blkMagic    = 0x65617400
	blkVersion  = 0x07
	blkRecord   = 48
	blkQueue    = 1      // __BLK_TA_QUEUE
	blkCgroup   = 1 << 8 // __BLK_TA_CGROUP: a cgroup id leads the payload
	tcRead      = 1 << 0
	tcWrite     = 1 << 1
	tcFlush     = 1 << 2
	tcNotify    = 1 << 10
	tcDiscard   = 1 << 13
	tcShift     = 16
	minorBits   = 20
	sectorBytes = 512
)

// isBlktrace tells whether head starts with a blktrace record, in either
// byte order.
func isBlktrace(head []byte) bool {
	if len(head) < 4 {
		return false
	}
	return binary.LittleEndian.Uint32(head)&0xffffff00 == blkMagic || binary.BigEndian.Uint32(head)&0xffffff00 == blkMagic
}

// ReadBlktrace reads blktrace's binary records from one stream or more:
// the per-CPU files of one trace, or one `blkparse -d` dump. An Error
// names the stream (Part, 0-based) and its record.
func ReadBlktrace(rs []io.Reader, o Options) (*Trace, error) {
	b := blkReader{skipped: map[string]Skipped{}}
	for part, r := range rs {
		if err := b.stream(r); err != nil {
			var e *Error
			if errors.As(err, &e) {
				e.Part = part
			}
			return nil, err
		}
	}
	return collect(FormatBlktrace, b.evs, b.skipped, o)
}

type blkReader struct {
	evs     []event
	skipped map[string]Skipped
}

// stream reads one file of records.
func (b *blkReader) stream(r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var rec [blkRecord]byte
	var order binary.ByteOrder
	var off int64
	for n := 1; ; n++ {
		got, err := io.ReadFull(br, rec[:])
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				err = fmt.Errorf("cut short: %d of %d bytes", got, blkRecord)
			}
			return &Error{Record: n, Offset: off, Err: err}
		}
		if order == nil {
			order = binary.ByteOrder(binary.LittleEndian)
			if binary.LittleEndian.Uint32(rec[:])&0xffffff00 != blkMagic {
				order = binary.BigEndian
			}
		}
		magic := order.Uint32(rec[0:])
		if magic&0xffffff00 != blkMagic {
			return &Error{Record: n, Offset: off, Err: fmt.Errorf("no blktrace magic (0x%08x)", magic)}
		}
		if v := magic & 0xff; v != blkVersion {
			return &Error{Record: n, Offset: off, Err: fmt.Errorf("blktrace version %d: only version %d is read", v, blkVersion)}
		}
		pdu := int64(order.Uint16(rec[46:]))
		if _, err := br.Discard(int(pdu)); err != nil {
			return &Error{Record: n, Offset: off, Err: fmt.Errorf("payload of %d bytes cut short", pdu)}
		}
		if err := b.record(order, rec[:]); err != nil {
			return &Error{Record: n, Offset: off, Err: err}
		}
		off += blkRecord + pdu
	}
}

// record takes one record: a queue event becomes an I/O or a skip.
func (b *blkReader) record(order binary.ByteOrder, rec []byte) error {
	action := order.Uint32(rec[28:])
	cat := action >> tcShift
	if cat&tcNotify != 0 || (action&0xffff)&^blkCgroup != blkQueue {
		return nil
	}
	time := order.Uint64(rec[8:])
	sector := order.Uint64(rec[16:])
	bytes := int64(order.Uint32(rec[24:]))
	dev := order.Uint32(rec[36:])
	if time > math.MaxInt64 || sector > math.MaxInt64/sectorBytes {
		return fmt.Errorf("time %d ns or sector %d out of range", time, sector)
	}
	name := fmt.Sprintf("%d:%d", dev>>minorBits, dev&(1<<minorBits-1))
	io := IO{At: int64(time), Offset: int64(sector) * sectorBytes, Size: bytes, Write: cat&tcWrite != 0}
	return b.take(name, io, cat&tcFlush != 0, cat&tcDiscard != 0)
}

// take books a queue event: replayed, or counted as skipped. A write
// with a flush before it is replayed as the write, its flush counted.
func (b *blkReader) take(dev string, io IO, flush, discard bool) error {
	s := b.skipped[dev]
	switch {
	case discard:
		s.Discards++
	case io.Size == 0 && flush:
		s.Flushes++
	case io.Size == 0:
		s.Empty++
	case io.Size > MaxSize:
		return fmt.Errorf("an I/O of %d bytes: more than the largest I/O replayed, %d MiB", io.Size, MaxSize>>20)
	default:
		if flush {
			s.Flushes++
			b.skipped[dev] = s
		}
		if len(b.evs) >= MaxIOs {
			return fmt.Errorf("more than %d I/Os", MaxIOs)
		}
		b.evs = append(b.evs, event{IO: io, dev: dev})
		return nil
	}
	b.skipped[dev] = s
	return nil
}
