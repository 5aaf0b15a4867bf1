package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/iomatrix/iomatrix/internal/vmtest"
	"github.com/iomatrix/iomatrix/results"
)

// The ring modes on a real NVMe queue, in the cgroup v2 guest booted with
// nvme.poll_queues=2 (the speed of an emulated drive says nothing of a
// real one: only the mechanics are checked):
//   - --poll runs at QD1 and QD32, and its completions are polled: the
//     evidence is the drive's interrupts (/proc/interrupts, the nvme0q*
//     lines), which a run without --poll raises (by one per I/O at QD1,
//     by fewer at QD32, where one interrupt may reap several) and a
//     polled run does not raise (poll queues have no interrupt);
//   - --sqpoll runs, alone and with --poll, its kernel thread's CPU in the
//     cell;
//   - the engine's allocation test, polled, run inside the guest;
//   - booted without poll queues, --poll is refused, exit 2, with the line.
func TestVMRingModes(t *testing.T) {
	const prelude = `say() { echo "vmcase: $*" >&2; }
irqs() { awk '/nvme0q/ { for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) n += $i } END { print n + 0 }' /proc/interrupts; }
R="--size 256m --runtime 1s --ramp 0.2s --format json"
`
	polled := []vmtest.Case{
		{Name: "poll", Script: prelude + `say "io_poll $(cat /sys/block/nvme0n1/queue/io_poll)"
for qd in 1 32; do
	for mode in "" "--poll"; do
		a=$(irqs); iomatrix run /dev/nvme0n1 --qd $qd $mode $R -o /tmp/r.json --force >/dev/null 2>/tmp/e || { say "run $mode failed: $(cat /tmp/e)"; exit 3; }
		b=$(irqs); say "qd$qd${mode:+ poll} irqs $((b - a)) ios $(grep -A2 '"completed"' /tmp/r.json | grep -o '"reads": *[0-9]*' | grep -o '[0-9]*$')"
	done
done
iomatrix run /dev/nvme0n1 --qd 8 --sqpoll $R; say "sqpoll exit $?"
iomatrix run /dev/nvme0n1 --qd 8 --sqpoll --poll $R >/tmp/sp.json; say "sqpoll+poll exit $?"
IOMATRIX_POLL_DEVICE=/dev/nvme0n1 /bin/iotest.test -test.run 'TestNoAllocationPerIOPolled$' -test.v >&2; say "alloc exit $?"
`},
	}
	files := map[string][]byte{"bin/iotest.test": vmtest.StaticTestBuild(t, "./iotest")}
	rs := vmtest.Boot(t, vmtest.Guest{Drives: []vmtest.Drive{{Size: 1 << 30}}, KernelArgs: []string{"nvme.poll_queues=2"}, Files: files}, polled)
	r := rs[0]
	if r.Exit != 0 {
		t.Fatalf("case exit %d\nstdout:\n%s\nstderr:\n%s", r.Exit, r.Stdout, r.Stderr)
	}
	said := func(key string) string { return vmcaseLine(r, key) }
	defer func() {
		if t.Failed() {
			t.Logf("stderr:\n%s", r.Stderr)
		}
	}()
	if said("io_poll") != "1" {
		t.Fatalf("booted with nvme.poll_queues=2, io_poll is %q", said("io_poll"))
	}
	for _, qd := range []string{"qd1", "qd32"} {
		plain, poll := irqsAndIOs(t, said(qd+" irqs")), irqsAndIOs(t, said(qd+" poll irqs"))
		t.Logf("%s: %d interrupts for %d I/Os with interrupts, %d for %d polled", qd, plain[0], plain[1], poll[0], poll[1])
		// One interrupt reaps every completion posted by the time its
		// handler runs, so how many an interrupt covers depends on how
		// soon the guest's CPU gets to it, not on the engine: about one
		// per I/O at QD1 (one in flight), 0.55-0.8 at QD32 in a guest
		// with the host to itself, and 0.08 (2,034 for 24,969) in a CI
		// run whose guest was starved by the tests beside it (its QD1
		// polled run did 533 I/Os where one alone does about 30,000).
		// So an interrupted run shows at least one per hundred I/Os, and
		// at QD1 (one per I/O, starved or not) at least one per two; the
		// polled run's few are the drive's other queues' (none should
		// move while it runs).
		least := plain[1] / 100
		if qd == "qd1" {
			least = plain[1] / 2
		}
		if plain[1] == 0 || poll[1] == 0 || plain[0] < least || poll[0] > poll[1]/100 {
			t.Errorf("%s: %v without --poll, %v with: the polled run's completions were not polled", qd, plain, poll)
		}
	}
	var doc results.Document
	if err := json.Unmarshal([]byte(r.Stdout[strings.Index(r.Stdout, "{"):]), &doc); err != nil || said("sqpoll") != "exit 0" {
		t.Fatalf("--sqpoll (%s): %v\n%s", said("sqpoll"), err, r.Stdout)
	}
	if st := doc.Results[0].SubmitThread; st == nil || st.Threads != 1 || st.Seconds <= 0 {
		t.Errorf("--sqpoll: submission thread %+v", st)
	}
	if said("sqpoll+poll") != "exit 0" || said("alloc") != "exit 0" {
		t.Errorf("--sqpoll --poll: %s; the polled allocation test: %s", said("sqpoll+poll"), said("alloc"))
	}

	// No poll queues: refused before any I/O.
	rs = vmtest.Boot(t, vmtest.Guest{Drives: []vmtest.Drive{{Size: 1 << 30}}}, []vmtest.Case{{Name: "refused", Script: prelude +
		`say "io_poll $(cat /sys/block/nvme0n1/queue/io_poll)"
iomatrix run /dev/nvme0n1 --poll --size 256m --runtime 1s 2>/tmp/e; say "poll exit $? $(cat /tmp/e)"
`}})
	said = func(key string) string { return vmcaseLine(rs[0], key) }
	if said("io_poll") != "0" || !strings.HasPrefix(said("poll"), "exit 2 iomatrix: --poll: ") || !strings.Contains(said("poll"), "nvme.poll_queues") {
		t.Errorf("without poll queues: io_poll %q, %q", said("io_poll"), said("poll"))
	}
}

// irqsAndIOs reads "N ios M", a case's interrupts and I/Os.
func irqsAndIOs(t *testing.T, s string) [2]int {
	f := strings.Fields(s)
	if len(f) != 3 || f[1] != "ios" {
		t.Fatalf("not N ios M: %q", s)
	}
	a, err1 := strconv.Atoi(f[0])
	b, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		t.Fatalf("not N ios M: %q", s)
	}
	return [2]int{a, b}
}
