package iotest

import (
	"unsafe"

	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/results"
)

// NVMe passthrough: I/O through a namespace's generic character device
// (/dev/ngXnY), each read or write an NVMe command handed to the driver
// by io_uring (IORING_OP_URING_CMD), with no block layer above it: no
// splitting, no scheduler, no cgroup throttle. The ABI is in
// include/uapi/linux/nvme_ioctl.h and io_uring.h. Package target finds
// the namespace (target.Namespace); the engine issues its commands.

const (
	// nvmeURingCmdIO is NVME_URING_CMD_IO, _IOWR('N', 0x80, struct
	// nvme_uring_cmd): an I/O command of the namespace.
	nvmeURingCmdIO = 0xC0000000 | uint32(unsafe.Sizeof(nvmeURingCmd{}))<<16 | 'N'<<8 | 0x80

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

// prepCmd fills the next SQE with an NVMe read or write of buf at byte
// offset off of the namespace. The buffer is given by address: a
// registered buffer would need the command's own fixed-buffer flag.
func (r *uring) prepCmd(ns *target.Namespace, write bool, buf []byte, off int64, userData uint64) {
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
	lba := uint64(off) >> ns.LBAShift
	*(*nvmeURingCmd)(unsafe.Add(unsafe.Pointer(sqe), uringCmdOffset)) = nvmeURingCmd{
		opcode:  op,
		nsid:    ns.ID,
		addr:    uint64(uintptr(unsafe.Pointer(&buf[0]))),
		dataLen: uint32(len(buf)),
		cdw10:   uint32(lba),
		cdw11:   uint32(lba >> 32),
		cdw12:   uint32(len(buf)>>ns.LBAShift) - 1,
	}
	r.tail++
	r.pending++
}

// checkNamespace refuses, before any I/O, what a passthrough target
// cannot run: the psync engine (a command needs a ring), durable writes,
// and I/Os larger
// than one command is sure to carry (the kernel never splits a
// passthrough command). engine may be resolved or not. Polled
// completions need poll queues, as a block device's do
// (target.Target.CheckPoll, on the namespace's disk).
func checkNamespace(ns *target.Namespace, p results.Pattern, engine string) error {
	if engine == EnginePsync {
		return pattern.Fieldf("engine", "an NVMe passthrough device takes commands through io_uring only: not with the psync engine")
	}
	if p.Sync != "" {
		return pattern.Fieldf("sync", "%s: an NVMe passthrough device takes read and write commands only (a durable write would need the NVMe Flush command or FUA, which are not issued)", p.Sync)
	}
	if ns.MaxBytes > 0 && p.BlockSize > ns.MaxBytes {
		return pattern.Fieldf("block_size", "%d bytes is more than one NVMe passthrough command is sure to carry on this device (%d bytes: its max_hw_sectors_kb, and max_segments pages): the kernel does not split passthrough commands",
			p.BlockSize, ns.MaxBytes)
	}
	return nil
}

// CheckPassthrough refuses, before any I/O, a pattern or options the
// passthrough target of namespace ns cannot run (see checkNamespace);
// o.Engine may be resolved or not. Other targets (ns nil: Plan.Namespace
// of one) take anything.
func CheckPassthrough(ns *target.Namespace, pat results.Pattern, o Options) error {
	if ns == nil {
		return nil
	}
	return checkNamespace(ns, pat, o.Engine)
}
