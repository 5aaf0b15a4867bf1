package target

import (
	"fmt"
	"math/bits"

	"golang.org/x/sys/unix"
)

// KindPassthrough is the kind of a target reached through NVMe
// passthrough commands (results.TargetInfo.Kind): I/O through a
// namespace's generic character device (/dev/ngXnY), each read or write
// an NVMe command with no block layer above it.
const KindPassthrough = "passthrough"

// nvmeIoctlID is NVME_IOCTL_ID, _IO('N', 0x40): the namespace id of the
// device it is asked of (include/uapi/linux/nvme_ioctl.h).
const nvmeIoctlID = 'N'<<8 | 0x40

// pageSize is the size of a page of the engine's buffers: each is a
// segment of its own on the way to the disk.
const pageSize = 4096

// Namespace is what an engine needs to address a passthrough target's
// NVMe namespace.
type Namespace struct {
	ID       uint32 // the namespace id (nsid)
	LBAShift uint   // log2 of the logical block size
	// MaxBytes is the most data one command may carry; 0 when unknown.
	// The kernel never splits a passthrough command: it refuses one that
	// is too large.
	MaxBytes int64
}

// newNamespace describes a namespace of logical blocks of lbs bytes.
func newNamespace(id uint32, lbs int, maxBytes int64) (*Namespace, error) {
	if lbs <= 0 || lbs&(lbs-1) != 0 {
		return nil, fmt.Errorf("logical block size %d is not a power of two", lbs)
	}
	return &Namespace{ID: id, LBAShift: uint(bits.TrailingZeros(uint(lbs))), MaxBytes: maxBytes}, nil
}

// Namespace addresses the namespace of a passthrough target; nil for any
// other target.
func (p *Plan) Namespace() *Namespace { return p.ns }

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
