package sysfs

import (
	"fmt"
	"os"
	"path/filepath"
)

// The package's one write: a queue attribute of a whole disk, which a
// measurement sets for a while and puts back (the iocost profile's
// nomerges). Everything else here reads.

// queueAttrFile is the path of the queue attribute name of disk.
func (fs FS) queueAttrFile(disk, name string) string {
	return filepath.Join(fs.sys, "block", disk, "queue", name)
}

// CheckQueueAttrWritable tells whether this process may write the queue
// attribute name of disk, without writing it: an attribute is opened for
// writing, and only a write stores. file is its path, for messages.
func (fs FS) CheckQueueAttrWritable(disk, name string) (file string, err error) {
	file = fs.queueAttrFile(disk, name)
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err != nil {
		return file, err
	}
	return file, f.Close()
}

// SetQueueAttr writes value to the queue attribute name of disk, and
// returns the value it reads back (the kernel may store another: an
// unknown elevator, a clamped number). file is the attribute's path.
func (fs FS) SetQueueAttr(disk, name, value string) (readBack, file string, err error) {
	file = fs.queueAttrFile(disk, name)
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err != nil {
		return "", file, err
	}
	// One write of the whole value: sysfs stores on each write(2).
	_, werr := f.WriteString(value)
	cerr := f.Close()
	if werr != nil {
		return "", file, fmt.Errorf("write %s to %s: %w", value, file, werr)
	}
	if cerr != nil {
		return "", file, cerr
	}
	readBack, err = readAttr(file)
	return readBack, file, err
}
