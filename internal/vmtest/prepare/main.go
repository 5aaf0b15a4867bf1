// Command prepare fills the cgroup v2 guests' cache (internal/vmtest):
// the kernel and busybox fetched from Debian's packages, and the systemd
// guest's root image built with mmdebstrap. .ci/run runs it beside the
// lint so that the guest tests find them ready.
//
//	go run ./internal/vmtest/prepare
package main

import (
	"fmt"
	"os"

	"github.com/iomatrix/iomatrix/internal/vmtest"
)

func main() {
	if err := vmtest.Prepare(); err != nil {
		fmt.Fprintln(os.Stderr, "prepare:", err)
		os.Exit(1)
	}
}
