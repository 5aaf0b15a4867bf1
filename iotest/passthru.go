package iotest

import (
	"fmt"
	"math/bits"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
)

// NVMe passthrough: I/O through a namespace's generic character device
// (/dev/ngXnY), each read or write an NVMe command handed to the driver
// by io_uring (IORING_OP_URING_CMD), with no block layer above it: no
// splitting, no scheduler, no cgroup throttle. The ABI is in
// include/uapi/linux/nvme_ioctl.h and io_uring.h.

// KindPassthrough is the kind of a target reached through NVMe
// passthrough commands (results.TargetInfo.Kind).
const KindPassthrough = "passthrough"

const (
	// nvmeURingCmdIO is NVME_URING_CMD_IO, _IOWR('N', 0x80, struct
	// nvme_uring_cmd): an I/O command of the namespace.
	nvmeURingCmdIO = 0xC0000000 | uint32(unsafe.Sizeof(nvmeURingCmd{}))<<16 | 'N'<<8 | 0x80
	// nvmeIoctlID is NVME_IOCTL_ID, _IO('N', 0x40): the namespace id of
	// the device it is asked of.
	nvmeIoctlID = 'N'<<8 | 0x40

	nvmeCmdWrite = 0x01
	nvmeCmdRead  = 0x02

	// uringCmdOffset is where an SQE's command area starts: the last 16
	// bytes of the first 64 and the whole second half of a 128-byte SQE.
	uringCmdOffset = 48
)

// nvmeURingCmd is struct nvme_uring_cmd.
type nvmeURingCmd struct {
	opcode      uint8
	flags       uint8
	rsvd1       uint16
	nsid        uint32
	cdw2, cdw3  uint32
	metadata    uint64
	addr        uint64
	metadataLen uint32
	dataLen     uint32
	cdw10       uint32 // starting LBA, low 32 bits
	cdw11       uint32 // and high
	cdw12       uint32 // number of LBAs, less one
	cdw13       uint32
	cdw14       uint32
	cdw15       uint32
	timeoutMs   uint32
	rsvd2       uint32
}

// Compile-time checks of the ABI: the command is 72 bytes, and fits the
// 80 bytes of a 128-byte SQE's command area.
var (
	_ [72 - unsafe.Sizeof(nvmeURingCmd{})]struct{}
	_ [unsafe.Sizeof(nvmeURingCmd{}) - 72]struct{}
	_ [128 - uringCmdOffset - unsafe.Sizeof(nvmeURingCmd{})]struct{}
)

// passthru is what an engine needs to address a passthrough target's
// namespace.
type passthru struct {
	nsid     uint32
	lbaShift uint  // log2 of the logical block size
	maxBytes int64 // the most data one command may carry; 0 when unknown
}

// prepCmd fills the next SQE with an NVMe read or write of buf at byte
// offset off of the namespace. The buffer is given by address: a
// registered buffer would need the command's own fixed-buffer flag.
func (r *uring) prepCmd(pt *passthru, write bool, buf []byte, off int64, userData uint64) {
	sqe := r.next()
	*sqe = uringSqe{
		opcode:   uringOpURingCmd,
		flags:    r.sqeFlags,
		off:      uint64(nvmeURingCmdIO), // cmd_op, the low half of off
		userData: userData,
	}
	op := uint8(nvmeCmdRead)
	if write {
		op = nvmeCmdWrite
	}
	lba := uint64(off) >> pt.lbaShift
	*(*nvmeURingCmd)(unsafe.Add(unsafe.Pointer(sqe), uringCmdOffset)) = nvmeURingCmd{
		opcode:  op,
		nsid:    pt.nsid,
		addr:    uint64(uintptr(unsafe.Pointer(&buf[0]))),
		dataLen: uint32(len(buf)),
		cdw10:   uint32(lba),
		cdw11:   uint32(lba >> 32),
		cdw12:   uint32(len(buf)>>pt.lbaShift) - 1,
	}
	r.tail++
	r.pending++
}

// newPassthru describes a namespace of logical blocks of lbs bytes.
func newPassthru(nsid uint32, lbs int, maxBytes int64) (*passthru, error) {
	if lbs <= 0 || lbs&(lbs-1) != 0 {
		return nil, fmt.Errorf("logical block size %d is not a power of two", lbs)
	}
	return &passthru{nsid: nsid, lbaShift: uint(bits.TrailingZeros(uint(lbs))), maxBytes: maxBytes}, nil
}

// namespaceID asks the driver for the namespace id of the generic device
// at path (NVME_IOCTL_ID), where sysfs does not give it.
func namespaceID(path string) (uint32, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	id, err := unix.IoctlRetInt(fd, nvmeIoctlID)
	if err != nil {
		return 0, fmt.Errorf("%s: namespace id (NVME_IOCTL_ID): %w", path, err)
	}
	if id <= 0 {
		return 0, fmt.Errorf("%s: namespace id (NVME_IOCTL_ID): %d", path, id)
	}
	return uint32(id), nil
}

// check refuses, before any I/O, what a passthrough target cannot run:
// the psync engine (a command needs a ring), and I/Os larger than one
// command is sure to carry (the kernel never splits a passthrough
// command). engine may be resolved or not. Polled completions need poll
// queues, as a block device's do (CheckPoll, on the namespace's disk).
func (pt *passthru) check(p results.Pattern, o Options, engine string) error {
	if engine == EnginePsync {
		return pattern.Fieldf("engine", "an NVMe passthrough device takes commands through io_uring only: not with the psync engine")
	}
	if pt.maxBytes > 0 && p.BlockSize > pt.maxBytes {
		return pattern.Fieldf("block_size", "%d bytes is more than one NVMe passthrough command is sure to carry on this device (%d bytes: its max_hw_sectors_kb, and max_segments pages): the kernel does not split passthrough commands",
			p.BlockSize, pt.maxBytes)
	}
	return nil
}

// CheckPassthrough refuses, before any I/O, a pattern or options a
// passthrough target cannot run (see passthru.check); o.Engine may be
// resolved or not. Other targets take anything.
func (p *Plan) CheckPassthrough(pat results.Pattern, o Options) error {
	if p.pt == nil {
		return nil
	}
	return p.pt.check(pat, o, o.Engine)
}
