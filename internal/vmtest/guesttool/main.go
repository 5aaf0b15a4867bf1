// Command guesttool does in a vmtest guest what its busybox cannot: set
// an extended attribute (systemd's trusted.delegate mark) and enter a new
// cgroup namespace. Built with CGO_ENABLED=0 and placed at /bin/guesttool
// by the tests that need it.
//
//	guesttool setxattr PATH NAME VALUE
//	guesttool ns PROG [ARG...]   PROG in a new cgroup and mount namespace
//	guesttool as UID PROG [ARG...]   PROG as user and group UID, no other groups
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"

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
	}
	return errors.New("usage: guesttool setxattr PATH NAME VALUE | guesttool ns PROG [ARG...] | guesttool as UID PROG [ARG...]")
}
