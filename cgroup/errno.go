package cgroup

import "syscall"

// syscallEBUSY is what rmdir of a cgroup with tasks fails with.
const syscallEBUSY = syscall.EBUSY
