package sysfs

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// Mount is one line of /proc/self/mountinfo, reduced to what is needed to
// tell whether a block device is mounted and where.
type Mount struct {
	Dev        DevNum // st_dev of files on the mount, 0:N for non-block filesystems
	Root       string // directory of the filesystem seen at MountPoint (bind mounts)
	MountPoint string
	FSType     string
	Source     string // "/dev/vda1", or whatever the filesystem reports
}

// ParseMountinfo parses the format of /proc/PID/mountinfo (proc(5)): six
// fixed fields, any number of optional fields, a lone "-", then filesystem
// type, source and super options. Paths are returned with the kernel's \ooo
// escapes decoded.
func ParseMountinfo(r io.Reader) ([]Mount, error) {
	return parseLines(r, "mountinfo", parseMountinfoLine)
}

func parseMountinfoLine(line string) (Mount, error) {
	// Split on single spaces rather than runs: a filesystem mounted with an
	// empty source name shows up as two adjacent spaces, and collapsing them
	// would shift the super options into the source.
	fields := strings.Split(line, " ")
	const fixed = 6 // id, parent id, dev, root, mount point, mount options
	sep := -1
	for i := fixed; i < len(fields); i++ {
		if fields[i] == "-" {
			sep = i
			break
		}
	}
	if len(fields) < fixed || sep < 0 {
		return Mount{}, errors.New(`missing " - " separator`)
	}
	tail := fields[sep+1:]
	if len(tail) < 3 {
		return Mount{}, fmt.Errorf("%d fields after separator, want 3", len(tail))
	}
	dev, err := ParseDevNum(fields[2])
	if err != nil {
		return Mount{}, err
	}
	return Mount{
		Dev:        dev,
		Root:       unescapeOctal(fields[3]),
		MountPoint: unescapeOctal(fields[4]),
		FSType:     unescapeOctal(tail[0]),
		Source:     unescapeOctal(tail[1]),
	}, nil
}

// Mounts returns the mounts of this process's mount namespace; a device
// mounted only inside another namespace (a container) does not appear.
func (fs FS) Mounts() ([]Mount, error) {
	return parseFile(filepath.Join(fs.proc, "self", "mountinfo"), ParseMountinfo)
}
