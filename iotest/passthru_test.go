package iotest

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/results"
)

// The ioctl number is the kernel's (include/uapi/linux/nvme_ioctl.h);
// target's TestNVMeIoctlNumbers has NVME_IOCTL_ID.
func TestNVMeIoctlNumbers(t *testing.T) {
	if nvmeURingCmdIO != 0xC0484E80 {
		t.Errorf("NVME_URING_CMD_IO %#x", nvmeURingCmdIO)
	}
}

// A passthrough command fills a whole 128-byte SQE as the kernel reads
// it: the io_uring header in the first 48 bytes (opcode 46, the fixed
// file, cmd_op at byte 8), then struct nvme_uring_cmd (the NVMe opcode,
// namespace, buffer, starting LBA in cdw10/cdw11, LBAs less one in
// cdw12), and nothing left of what the slot held before.
func TestPrepCmdLayout(t *testing.T) {
	r := &uring{sqes: make([]uringSqe, 2*4), sqMask: 3, big: true, sqeShift: 1, sqeFlags: uringSqeFixedFile}
	for i := range r.sqes {
		r.sqes[i] = uringSqe{opcode: 0xff, fd: -7, addr: ^uint64(0), addr3: ^uint64(0), pad2: ^uint64(0)} // dirty
	}
	ns := &target.Namespace{ID: 3, LBAShift: 12, MaxBytes: 1 << 20}
	buf := make([]byte, 16384)
	r.tail = 5 // the slot at position 5 is slot 1: SQE elements 2 and 3
	lba := uint64(5)<<32 | 7
	r.prepCmd(ns, true, buf, int64(lba*4096), 42)
	if r.tail != 6 || r.pending != 1 {
		t.Fatalf("tail %d, pending %d", r.tail, r.pending)
	}
	sqe := unsafe.Slice((*byte)(unsafe.Pointer(&r.sqes[2])), 128)
	le32 := func(off int) uint32 { return binary.LittleEndian.Uint32(sqe[off:]) }
	le64 := func(off int) uint64 { return binary.LittleEndian.Uint64(sqe[off:]) }
	for _, c := range []struct {
		what      string
		got, want uint64
	}{
		{"opcode", uint64(sqe[0]), 46},
		{"flags", uint64(sqe[1]), uringSqeFixedFile},
		{"fd", uint64(le32(4)), 0},
		{"cmd_op", uint64(le32(8)), 0xC0484E80},
		{"cmd_op's pad", uint64(le32(12)), 0},
		{"addr", le64(16), 0},
		{"len", uint64(le32(24)), 0},
		{"uring_cmd_flags", uint64(le32(28)), 0},
		{"user_data", le64(32), 42},
		{"nvme opcode", uint64(sqe[48]), 0x01},
		{"nvme flags", uint64(sqe[49]), 0},
		{"nsid", uint64(le32(52)), 3},
		{"metadata", le64(64), 0},
		{"buffer", le64(72), uint64(uintptr(unsafe.Pointer(&buf[0])))},
		{"data_len", uint64(le32(84)), 16384},
		{"cdw10", uint64(le32(88)), 7},
		{"cdw11", uint64(le32(92)), 5},
		{"cdw12", uint64(le32(96)), 3},
		{"timeout_ms", uint64(le32(112)), 0},
		{"the command area's end", le64(120), 0},
	} {
		if c.got != c.want {
			t.Errorf("%s: %#x, want %#x", c.what, c.got, c.want)
		}
	}
	// A read, and the other slots untouched.
	r.prepCmd(ns, false, buf[:4096], 4096, 43)
	if next := unsafe.Slice((*byte)(unsafe.Pointer(&r.sqes[4])), 128); next[48] != 0x02 || binary.LittleEndian.Uint32(next[96:]) != 0 ||
		binary.LittleEndian.Uint32(next[88:]) != 1 {
		t.Errorf("read: opcode %#x, cdw10 %d, cdw12 %d", next[48], binary.LittleEndian.Uint32(next[88:]), binary.LittleEndian.Uint32(next[96:]))
	}
	if r.sqes[0].opcode != 0xff || r.sqes[6].opcode != 0xff {
		t.Errorf("other slots written")
	}
	// The ring's timer in a ring of 128-byte SQEs clears the second half.
	at := (r.tail & r.sqMask) << r.sqeShift
	r.armTimer()
	if tm := r.sqes[at]; tm.opcode != uringOpTimeout || r.sqes[at+1] != (uringSqe{}) {
		t.Errorf("timer SQE %+v, second half %+v", tm, r.sqes[at+1])
	}
}

// In a ring of 32-byte CQEs, a completion takes two elements of cqes.
func TestPeekBigCQE(t *testing.T) {
	var head, tail uint32 = 6, 8
	r := &uring{cqes: make([]uringCqe, 2*4), cqMask: 3, cqeShift: 1, cqHead: &head, cqTail: &tail}
	for i := range r.cqes {
		r.cqes[i].userData = uint64(i)
	}
	if r.cqReady() != 2 || r.peek(0).userData != 4 || r.peek(1).userData != 6 || r.peek(2).userData != 0 {
		t.Errorf("ready %d, peek 0..2: %d %d %d", r.cqReady(), r.peek(0).userData, r.peek(1).userData, r.peek(2).userData)
	}
}

// What a passthrough target cannot run is refused before any I/O: the
// namespace is the one target's TestPlanPassthrough plans (4 KiB blocks,
// 16 segments of a page).
func TestCheckPassthrough(t *testing.T) {
	ns := &target.Namespace{ID: 2, LBAShift: 12, MaxBytes: 16 * 4096}
	four := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 100, QueueDepth: 1, Jobs: 1}
	big := four
	big.BlockSize = 128 << 10 // max_hw_sectors_kb, but 32 pages
	for _, c := range []struct {
		p     results.Pattern
		o     Options
		field string
	}{
		{four, Options{Engine: EngineUring}, ""},
		{four, Options{Engine: EngineAuto}, ""},
		{four, Options{Engine: EngineUring, Ring: RingMode{Poll: true, SQPoll: true}}, ""}, // CheckPoll's, on the disk
		{four, Options{Engine: EnginePsync}, "engine"},
		{big, Options{Engine: EngineUring}, "block_size"},
	} {
		if err := CheckPassthrough(ns, c.p, c.o); (c.field == "" && err != nil) || (c.field != "" && !pattern.IsField(err, c.field)) {
			t.Errorf("%s %+v: %v, want field %q", c.p.Name(), c.o, err, c.field)
		}
	}

	// Any other target takes anything.
	if err := CheckPassthrough(nil, results.Pattern{Access: results.Random, BlockSize: 1 << 20, ReadPct: 100, QueueDepth: 1, Jobs: 1}, Options{Engine: EnginePsync}); err != nil {
		t.Errorf("no namespace: %v", err)
	}
}
