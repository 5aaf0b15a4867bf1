package iotest

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/iomatrix/iomatrix/internal/sysfs"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
)

// The ioctl numbers are the kernel's (include/uapi/linux/nvme_ioctl.h).
func TestNVMeIoctlNumbers(t *testing.T) {
	if nvmeURingCmdIO != 0xC0484E80 || nvmeIoctlID != 0x4E40 {
		t.Errorf("NVME_URING_CMD_IO %#x, NVME_IOCTL_ID %#x", nvmeURingCmdIO, nvmeIoctlID)
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
	pt, err := newPassthru(3, 4096, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16384)
	r.tail = 5 // the slot at position 5 is slot 1: SQE elements 2 and 3
	lba := uint64(5)<<32 | 7
	r.prepCmd(pt, true, buf, int64(lba*4096), 42)
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
	r.prepCmd(pt, false, buf[:4096], 4096, 43)
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

// fakeNVMe is a sysfs and procfs tree with one NVMe namespace of 1 GiB
// in 4 KiB blocks: the block device nvme0n1 (259:0), and as its generic
// device the character device number of /dev/null (1:3), so that a test
// plans /dev/null as if it were /dev/ng0n1 without a device of its own.
func fakeNVMe(t *testing.T, nsid bool) (sysfs.FS, string) {
	t.Helper()
	root := t.TempDir()
	write := func(rel, content string) {
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, rel string) {
		path := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
	}
	ctrl := "sys/devices/pci0000:00/nvme/nvme0"
	disk := ctrl + "/nvme0n1"
	for name, v := range map[string]string{"dev": "259:0", "size": "2097152", "queue/logical_block_size": "4096", "queue/physical_block_size": "4096",
		"queue/rotational": "0", "queue/max_sectors_kb": "128", "queue/max_hw_sectors_kb": "128", "queue/max_segments": "16", "queue/scheduler": "[none]"} {
		write(disk+"/"+name, v)
	}
	if nsid {
		write(disk+"/nsid", "2")
	}
	if err := os.MkdirAll(filepath.Join(root, disk, "holders"), 0o755); err != nil {
		t.Fatal(err)
	}
	link("../devices/pci0000:00/nvme/nvme0/nvme0n1", "sys/block/nvme0n1")
	link("../../devices/pci0000:00/nvme/nvme0/nvme0n1", "sys/dev/block/259:0")
	write(ctrl+"/ng0n1/dev", "1:3")
	if err := os.MkdirAll(filepath.Join(root, "sys/class/nvme-generic"), 0o755); err != nil {
		t.Fatal(err)
	}
	link("../../../../../class/nvme-generic", ctrl+"/ng0n1/subsystem")
	link("../../devices/pci0000:00/nvme/nvme0/ng0n1", "sys/dev/char/1:3")
	write("proc/self/mountinfo", "22 1 0:21 / /proc rw - proc proc rw")
	write("proc/swaps", "Filename\tType\tSize\tUsed\tPriority")
	return sysfs.NewFS(filepath.Join(root, "sys"), filepath.Join(root, "proc")), root
}

// A generic NVMe device is planned from its namespace's block device:
// size, block size, namespace id; its disk's counters are said not to
// count it; writes need AllowDestructive and a namespace nothing uses.
func TestPlanPassthrough(t *testing.T) {
	fs, root := fakeNVMe(t, true)
	p, err := PlanTarget("/dev/null", TargetOptions{Sys: &fs})
	if err != nil {
		t.Fatal(err)
	}
	want := results.TargetInfo{Path: "/dev/null", Kind: KindPassthrough, Device: "259:0", Disk: "nvme0n1", SizeBytes: 1 << 30, LogicalBlockSize: 4096, NSID: 2}
	if p.Info != want || p.Size != 1<<30 || p.Align != 4096 || p.Action != ActionDevice {
		t.Errorf("plan %+v\nwant info %+v", p, want)
	}
	if p.pt == nil || p.pt.nsid != 2 || p.pt.lbaShift != 12 || p.pt.maxBytes != 16*4096 || p.hasDev || !strings.Contains(p.devNote, "not counted") {
		t.Errorf("passthru %+v, hasDev %v, note %q", p.pt, p.hasDev, p.devNote)
	}

	// What the target cannot run is refused before any I/O.
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
		if err := p.CheckPassthrough(c.p, c.o); (c.field == "" && err != nil) || (c.field != "" && !pattern.IsField(err, c.field)) {
			t.Errorf("%s %+v: %v, want field %q", c.p.Name(), c.o, err, c.field)
		}
	}

	// Writes.
	if _, err := PlanTarget("/dev/null", TargetOptions{Sys: &fs, Writes: true}); !errors.Is(err, ErrDestructive) {
		t.Errorf("writes without AllowDestructive: %v", err)
	}
	if p, err := PlanTarget("/dev/null", TargetOptions{Sys: &fs, Writes: true, AllowDestructive: true, Size: 1 << 20}); err != nil || p.Size != 1<<20 {
		t.Errorf("writes, 1 MiB: %v", err)
	}
	if err := os.WriteFile(filepath.Join(root, "proc/self/mountinfo"), []byte("40 1 259:0 / /mnt rw - ext4 /dev/nvme0n1 rw\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := PlanTarget("/dev/null", TargetOptions{Sys: &fs, Writes: true, AllowDestructive: true}); !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "nvme0n1: mounted at /mnt") {
		t.Errorf("writes to a mounted namespace: %v", err)
	}

	// Without a namespace id in sysfs, the driver is asked: /dev/null
	// has no answer, and says so.
	fs, _ = fakeNVMe(t, false)
	if _, err := PlanTarget("/dev/null", TargetOptions{Sys: &fs}); err == nil || !strings.Contains(err.Error(), "NVME_IOCTL_ID") {
		t.Errorf("no nsid attribute: %v", err)
	}
}

// A character device of another kind is no target.
func TestPlanOtherCharDevice(t *testing.T) {
	fs, _ := fakeNVMe(t, true)
	if _, err := PlanTarget("/dev/zero", TargetOptions{Sys: &fs}); !errors.Is(err, ErrNotTarget) || !strings.Contains(err.Error(), "not an NVMe generic device") {
		t.Errorf("/dev/zero: %v", err)
	}
}
