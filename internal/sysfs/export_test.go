package sysfs

// Resolve is resolve, for the tests of the real machine (real_test.go,
// an external test package).
func (fs FS) Resolve(path string) (DevNum, bool) { return fs.resolve(path) }

// Kthreadd is kthreadd's process id, for the tests of the real machine.
const Kthreadd = kthreadd
