package fio

import "github.com/iomatrix/iomatrix/internal/fault"

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
