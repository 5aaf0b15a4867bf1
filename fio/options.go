package fio

import "github.com/iomatrix/iomatrix/internal/fault"

// Aliases are fio's names of options that mean the same in iomatrix, by
// fio's name: a fio command line's options carry over.
var Aliases = map[string]string{
	"iodepth":       "qd",
	"numjobs":       "jobs",
	"rwmixread":     "rwmix",
	"ramp_time":     "ramp",
	"output-format": "format",
	"ioengine":      "engine",
	"blocksize":     "bs",
	"readwrite":     "rw",
}

// Always are fio's options for what iomatrix always does, each with why
// asking for the opposite is refused.
var Always = map[string]string{
	"direct":          "iomatrix measures O_DIRECT I/O only (buffered I/O would measure the page cache)",
	"time_based":      "iomatrix always runs each pattern for --runtime",
	"group_reporting": "iomatrix always reports the jobs of a pattern together",
}

// Engine maps fio's engine names to iomatrix's: io_uring is uring; the
// other asynchronous and synchronous engines get the nearest one
// suggested rather than silently substituted; any other name is
// returned as it is.
func Engine(name string) (string, error) {
	switch name {
	case "io_uring":
		return "uring", nil
	case "libaio", "posixaio":
		return "", fault.Input("engine", "%s is not an iomatrix engine; use uring (io_uring, asynchronous as well)", name)
	case "sync", "pvsync", "pvsync2":
		return "", fault.Input("engine", "%s is not an iomatrix engine; use psync (pread/pwrite)", name)
	}
	return name, nil
}
