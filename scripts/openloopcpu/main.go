// Command openloopcpu compares the CPU an open-loop run costs per I/O
// with a closed loop's at the same IOPS, on the same device, through the
// same submission path, in alternating pairs.
//
// A closed loop runs at the rate of the open loop only when something
// holds it there. A cgroup cap on the target itself would: but then the
// kernel's throttle holds each request and its worker thread, not the
// measured process, later issues it to the device, so the closed loop
// would not pay for its own submissions and would look cheap. Here the
// target is put behind a loop device of its own (direct I/O), both runs
// go to the loop device, and the cap is on the target's device, under
// it: each run submits its requests to the loop device itself, and the
// closed loop's rate is held below, in the loop driver's worker. The
// open loop runs under a cap ten times its rate, so that both run in a
// fresh cgroup of their own and nothing holds the open loop back.
//
// For each rate it prints the CPU time per I/O of each mode (median of the
// pairs, with the range; then user and system time apart), the context
// switches per I/O, and the median of the pairs' ratios open/closed. A rate written as a share (80%) is a
// share of the closed-loop maximum at -qd, measured first; the closed loop
// then runs at -qd too. An absolute rate is compared with a closed loop at
// the smallest queue depth that reaches it.
//
//	go run ./scripts/openloopcpu -target /dev/loop0 -rates 1000,20000,80%
//	go run ./scripts/openloopcpu -target /tmp/iomatrix.dat -pairs 7
//
// It needs root, losetup and an iomatrix binary (-bin, default the one
// on PATH).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/iomatrix/iomatrix/internal/stats"
	"github.com/iomatrix/iomatrix/iotest/pattern"
	"github.com/iomatrix/iomatrix/results"
)

type config struct {
	bin, target, bs string
	rates, arrivals []string
	pairs, qd       int
	runtime, ramp   time.Duration
}

func main() {
	var c config
	var rates, arrivals string
	flag.StringVar(&c.bin, "bin", "iomatrix", "the iomatrix binary")
	flag.StringVar(&c.target, "target", "", "a block device or a file iomatrix laid out (required)")
	flag.StringVar(&rates, "rates", "1000,20000,80%", "the open loop's rates: IOPS, or a share of the closed-loop maximum")
	flag.StringVar(&arrivals, "arrivals", "uniform,poisson", "the open loop's arrivals")
	flag.StringVar(&c.bs, "bs", "4k", "block size of the random reads")
	flag.IntVar(&c.pairs, "pairs", 5, "alternating pairs per rate and arrival")
	flag.IntVar(&c.qd, "qd", 32, "the open loop's most in flight, and the closed loop's depth for a share")
	flag.DurationVar(&c.runtime, "runtime", 4*time.Second, "each run's window")
	flag.DurationVar(&c.ramp, "ramp", 500*time.Millisecond, "each run's ramp")
	flag.Parse()
	c.rates, c.arrivals = strings.Split(rates, ","), strings.Split(arrivals, ",")
	if c.target == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: openloopcpu -target DEVICE|FILE [-rates 1000,20000,80%] [-pairs N] [-bin PATH]")
		os.Exit(2)
	}
	for _, r := range c.rates {
		if _, err := pattern.ParseRate(r); err != nil {
			fmt.Fprintf(os.Stderr, "openloopcpu: -rates: %v\n", err)
			os.Exit(2)
		}
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "openloopcpu:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	out, err := exec.Command("losetup", "-f", "--show", "--direct-io=on", c.target).CombinedOutput()
	if err != nil {
		return fmt.Errorf("losetup over %s: %v: %s", c.target, err, out)
	}
	loop := strings.TrimSpace(string(out))
	defer func() { _ = exec.Command("losetup", "-d", loop).Run() }()
	fmt.Printf("target %s behind %s; each closed loop held to the rate by a cap on %s's device\n", c.target, loop, c.target)
	fmt.Printf("cpu/io: user+sys CPU µs per I/O over the window (median [min-max] of %d runs), then user and sys apart (medians);\n", c.pairs)
	fmt.Printf("sw/io: context switches per I/O; open/closed: the median of the pairs' ratios of cpu/io [min-max]\n\n")
	fmt.Printf("%-10s %-8s %-16s %8s %22s %6s %6s %6s %8s\n", "rate", "arrival", "mode", "IOPS", "cpu/io", "user", "sys", "sw/io", "open/closed")
	for _, spec := range c.rates {
		rs, _ := pattern.ParseRate(spec)
		rate, closedQD := rs.Rate.IOPS, c.qd
		if rs.SharePct > 0 {
			max, err := c.measure(loop, 0, c.qd, 0, "")
			if err != nil {
				return err
			}
			rate = math.Round(rs.SharePct / 100 * max.Total.IOPS)
		} else if closedQD, err = c.depthFor(loop, rate); err != nil {
			return err
		}
		for _, arrival := range c.arrivals {
			var closed, open []results.Result
			for k := range c.pairs {
				pair := []func() error{
					func() error {
						r, err := c.measure(loop, rate, closedQD, 0, "")
						closed = append(closed, r)
						return err
					},
					func() error {
						r, err := c.measure(loop, 10*rate, c.qd, rate, arrival)
						open = append(open, r)
						return err
					},
				}
				if k%2 == 1 {
					slices.Reverse(pair) // A B, B A: a drift of the machine falls on both
				}
				for _, f := range pair {
					if err := f(); err != nil {
						return err
					}
				}
			}
			label := spec
			if rs.SharePct > 0 {
				label = fmt.Sprintf("%s=%.0f", spec, rate)
			}
			var ratios []float64
			for k := range closed {
				ratios = append(ratios, perIO(open[k])/perIO(closed[k]))
			}
			line(label, arrival, fmt.Sprintf("QD%d capped", closedQD), closed, "")
			line("", "", "open loop", open, fmt.Sprintf("%.2fx [%.2f-%.2f]", stats.Median(ratios), slices.Min(ratios), slices.Max(ratios)))
		}
	}
	return nil
}

// measure runs 4K random reads on loop at qd, in a fresh cgroup capped at
// cap read IOPS on the target's device, open-loop at rate when it is set.
func (c config) measure(loop string, cap float64, qd int, rate float64, arrival string) (results.Result, error) {
	args := []string{"run", loop, "--rw", "randread", "--bs", c.bs, "--qd", strconv.Itoa(qd),
		"--runtime", c.runtime.String(), "--ramp", c.ramp.String(), "--format", "json"}
	if rate > 0 {
		args = append(args, "--rate", strconv.FormatFloat(rate, 'f', 0, 64), "--arrival", arrival)
	}
	if cap > 0 {
		args = append([]string{"throttle", "--cap", fmt.Sprintf("riops=%.0f", math.Ceil(cap)), "--device", c.target, "--", c.bin}, args...)
	}
	cmd := exec.Command(c.bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return results.Result{}, fmt.Errorf("%s %s: %v: %s", c.bin, strings.Join(args, " "), err, stderr.Bytes())
	}
	var doc results.Document
	if err := json.Unmarshal(out, &doc); err != nil || len(doc.Results) == 0 {
		return results.Result{}, fmt.Errorf("%s %s: no results document (%v)", c.bin, strings.Join(args, " "), err)
	}
	r := doc.Results[len(doc.Results)-1]
	if cap > 0 && rate == 0 && r.Total.IOPS < 0.95*cap {
		fmt.Fprintf(os.Stderr, "openloopcpu: the closed loop at QD%d did %.0f IOPS under a cap of %.0f: the device, not the cap, held it\n", qd, r.Total.IOPS, cap)
	}
	return r, nil
}

// depthFor is the smallest power-of-two queue depth at which an uncapped
// closed loop on loop does a quarter more than rate (estimated from QD1),
// at most c.qd.
func (c config) depthFor(loop string, rate float64) (int, error) {
	r, err := c.measure(loop, 0, 1, 0, "")
	if err != nil {
		return 0, err
	}
	qd := 1
	for qd < c.qd && float64(qd)*r.Total.IOPS < 1.25*rate {
		qd *= 2
	}
	return qd, nil
}

// perIO is r's CPU time per I/O in µs: user and system together.
func perIO(r results.Result) float64 { return userPerIO(r) + sysPerIO(r) }

func userPerIO(r results.Result) float64 { return pctPerIO(r, r.CPU.UserPct) }

func sysPerIO(r results.Result) float64 { return pctPerIO(r, r.CPU.SysPct) }

func pctPerIO(r results.Result, pct float64) float64 {
	secs := float64(r.DurationNS) / 1e9
	return pct / 100 * secs / float64(max(r.Total.IOs, 1)) * 1e6
}

func line(rate, arrival, mode string, rs []results.Result, ratio string) {
	var cpu, user, sys, sw, iops []float64
	for _, r := range rs {
		cpu = append(cpu, perIO(r))
		user = append(user, userPerIO(r))
		sys = append(sys, sysPerIO(r))
		sw = append(sw, float64(r.CPU.Switches)/float64(max(r.Total.IOs, 1)))
		iops = append(iops, r.Total.IOPS)
	}
	fmt.Printf("%-10s %-8s %-16s %8.0f %8.2f [%5.2f-%5.2f] %6.2f %6.2f %6.2f %8s\n", rate, arrival, mode, stats.Median(iops),
		stats.Median(cpu), slices.Min(cpu), slices.Max(cpu), stats.Median(user), stats.Median(sys), stats.Median(sw), ratio)
}
