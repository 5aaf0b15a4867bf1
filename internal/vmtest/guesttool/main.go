// Command guesttool does in a vmtest guest what its busybox cannot: set
// an extended attribute (systemd's trusted.delegate mark) and enter a new
// cgroup namespace. Built with CGO_ENABLED=0 and placed at /bin/guesttool
// by the tests that need it.
//
//	guesttool setxattr PATH NAME VALUE
//	guesttool ns PROG [ARG...]   PROG in a new cgroup and mount namespace
//	guesttool as UID PROG [ARG...]   PROG as user and group UID, no other groups
//	guesttool smart /dev/nvmeX   the controller's host read and write commands
//
// smart reads the NVMe SMART / health log (log page 0x02) through the
// admin passthrough ioctl and prints its "host read commands" and "host
// write commands" counters, the drive's own count of the I/O commands it
// completed: "reads N writes M".
package main

import (
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.ExitCode())
		}
		fmt.Fprintln(os.Stderr, "guesttool:", err)
		os.Exit(125)
	}
}

func run(args []string) error {
	switch {
	case len(args) == 4 && args[0] == "setxattr":
		if err := unix.Setxattr(args[1], args[2], []byte(args[3]), 0); err != nil {
			return fmt.Errorf("setxattr %s %s: %w", args[1], args[2], err)
		}
		return nil
	case len(args) >= 2 && args[0] == "ns":
		// A child rather than unshare and exec: unshare(2) applies to the
		// calling thread only, and the Go runtime has several.
		cmd := exec.Command(args[1], args[2:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWCGROUP | unix.CLONE_NEWNS}
		return cmd.Run()
	case len(args) >= 3 && args[0] == "as":
		id, err := strconv.ParseUint(args[1], 10, 32)
		if err != nil {
			return fmt.Errorf("as %s: %w", args[1], err)
		}
		cmd := exec.Command(args[2], args[3:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(id), Gid: uint32(id), Groups: []uint32{}}}
		return cmd.Run()
	case len(args) == 2 && args[0] == "smart":
		reads, writes, err := smartCommands(args[1])
		if err != nil {
			return err
		}
		fmt.Printf("reads %s writes %s\n", reads, writes)
		return nil
	}
	return errors.New("usage: guesttool setxattr PATH NAME VALUE | guesttool ns PROG [ARG...] | guesttool as UID PROG [ARG...] | guesttool smart /dev/nvmeX")
}

// nvmePassthruCmd is struct nvme_passthru_cmd (linux/nvme_ioctl.h).
type nvmePassthruCmd struct {
	opcode, flags        uint8
	rsvd1                uint16
	nsid, cdw2, cdw3     uint32
	metadata, addr       uint64
	metadataLen, dataLen uint32
	cdw10, cdw11, cdw12  uint32
	cdw13, cdw14, cdw15  uint32
	timeoutMs, result    uint32
}

// nvmeIoctlAdminCmd is NVME_IOCTL_ADMIN_CMD, _IOWR('N', 0x41, struct
// nvme_admin_cmd).
const nvmeIoctlAdminCmd = 0xC0000000 | uint32(unsafe.Sizeof(nvmePassthruCmd{}))<<16 | 'N'<<8 | 0x41

// smartCommands reads the SMART / health log of the controller at path
// and returns its host read and host write commands (bytes 64-79 and
// 80-95, 128-bit little endian).
func smartCommands(path string) (reads, writes *big.Int, err error) {
	fd, err := unix.Open(path, unix.O_RDONLY, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	page := make([]byte, 512)
	cmd := nvmePassthruCmd{
		opcode:  0x02,       // Get Log Page
		nsid:    0xFFFFFFFF, // the controller's, all namespaces
		addr:    uint64(uintptr(unsafe.Pointer(&page[0]))),
		dataLen: uint32(len(page)),
		cdw10:   0x02 | uint32(len(page)/4-1)<<16, // log 0x02, number of dwords less one
	}
	status, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(nvmeIoctlAdminCmd), uintptr(unsafe.Pointer(&cmd)))
	if errno != 0 {
		return nil, nil, fmt.Errorf("%s: get log page 0x02: %w", path, errno)
	}
	if status != 0 {
		return nil, nil, fmt.Errorf("%s: get log page 0x02: NVMe status %#x", path, status)
	}
	le128 := func(b []byte) *big.Int {
		be := make([]byte, 16)
		for i := range be {
			be[i] = b[15-i]
		}
		return new(big.Int).SetBytes(be)
	}
	return le128(page[64:80]), le128(page[80:96]), nil
}
