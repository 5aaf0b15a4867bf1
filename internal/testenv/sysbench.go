package testenv

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// SysbenchReport is what sysbench (1.0) reports of a run: its final
// report and, with --report-interval, its report of each interval.
type SysbenchReport struct {
	Threads int
	// Rate is the offered rate (--rate, "Target transaction rate"), in
	// transactions a second; 0 when the run went as fast as it could.
	Rate int
	// Transactions and TPS are the transactions done and their rate
	// over the run: the achieved rate.
	Transactions int64
	TPS          float64
	Queries      int64
	QPS          float64
	// Errors are the ignored errors (deadlocks the test retried),
	// Reconnects the reconnections.
	Errors, Reconnects int64
	// Time is the run's total time, Events its events (transactions).
	Time   time.Duration
	Events int64
	// The latency of a transaction. With --rate, sysbench 1.0.20 (the
	// Debian package measured here) counts it from the transaction's
	// arrival in the queue, so it includes the wait for a free thread:
	// a run that falls behind shows latencies as long as its backlog
	// (the sample in testdata: 2.6 s on average, and a sum of latencies
	// of 328 s from 2 threads in 5 s).
	LatencyMin, LatencyAvg, LatencyMax time.Duration
	// Percentile is the rank of LatencyPercentile (--percentile, 95 by
	// default); 0 when sysbench computed none.
	Percentile        int
	LatencyPercentile time.Duration
	// Intervals are the reports of each interval, in order.
	Intervals []SysbenchInterval
	// Histogram, with --histogram, is the transactions' latencies by
	// sysbench's buckets (logarithmic, about 1.4 % apart), in order.
	Histogram []SysbenchBucket
	// QueueFull is sysbench's fatal error when its queue of arrived
	// transactions (100000 at most) overflowed: the run was far behind
	// and stopped early.
	QueueFull bool
}

// SysbenchBucket is one row of sysbench's latency histogram: the
// transactions whose latency fell in the bucket of that value.
type SysbenchBucket struct {
	Latency time.Duration
	Count   int64
}

// HistogramPercentile is the latency at percentile p of the histogram:
// the value of the bucket that holds it; 0 without a histogram.
func (r SysbenchReport) HistogramPercentile(p float64) time.Duration {
	var total int64
	for _, b := range r.Histogram {
		total += b.Count
	}
	rank := int64(math.Ceil(p / 100 * float64(total)))
	var seen int64
	for _, b := range r.Histogram {
		if seen += b.Count; seen >= rank && total > 0 {
			return b.Latency
		}
	}
	return 0
}

// SysbenchInterval is sysbench's report of one interval.
type SysbenchInterval struct {
	// At is the time since the start at the interval's end.
	At      time.Duration
	Threads int
	TPS     float64
	QPS     float64
	// LatencyPercentile is the interval's latency at the report's
	// percentile.
	LatencyPercentile time.Duration
	// Queue, with --rate, is how many arrived transactions waited for a
	// thread at the interval's end, Concurrency how many were running.
	Queue, Concurrency int
}

// Behind tells whether a run at a fixed rate fell behind it: whether
// more than a tenth of a second's arrivals (and more than its threads)
// still waited in sysbench's queue when the last interval ended, or the
// queue overflowed. A run that keeps up has its queue drained over and
// over, with a few arrivals waiting at most; one that does not has a
// queue that grows all through the run. Without --rate-intervals (or
// without --rate) it is false: there is no queue to read.
func (r SysbenchReport) Behind() bool {
	if r.QueueFull {
		return true
	}
	if r.Rate == 0 || len(r.Intervals) == 0 {
		return false
	}
	return r.Intervals[len(r.Intervals)-1].Queue > max(r.Threads, r.Rate/10)
}

// MaxQueue is the longest queue an interval's report saw.
func (r SysbenchReport) MaxQueue() int {
	longest := 0
	for _, in := range r.Intervals {
		longest = max(longest, in.Queue)
	}
	return longest
}

// ErrNoSysbenchReport is ParseSysbench's error for an output without
// sysbench's final report (a run that failed, or another tool's output).
var ErrNoSysbenchReport = errors.New("no sysbench report")

var (
	sysbenchInterval = regexp.MustCompile(`^\[ *(\d+)s *\] thds: (\d+) tps: ([\d.]+) qps: ([\d.]+) (?:.*lat \(ms,(\d+)%\): ([\d.]+) )?`)
	sysbenchQueue    = regexp.MustCompile(`^\[ *(\d+)s *\] queue length: (\d+), concurrency: (\d+)`)
	sysbenchCount    = regexp.MustCompile(`^(transactions|queries|ignored errors|reconnects): +(\d+) +\(([\d.]+) per sec\.\)`)
	sysbenchValue    = regexp.MustCompile(`^([a-z ]+|\d+th percentile): +([\d.]+)s?$`)
	sysbenchBucket   = regexp.MustCompile(`^([\d.]+) \|\** +(\d+)$`)
)

// ParseSysbench reads the output of a sysbench (1.0) run of a database
// test: the lines of its final report by their names, wherever they
// stand and however they are spaced, and its intervals' reports. An
// output that lacks the transactions, the total time or the latency
// is an error, ErrNoSysbenchReport when it lacks all of them.
func ParseSysbench(out string) (SysbenchReport, error) {
	var r SysbenchReport
	var have struct{ transactions, time, latency bool }
	section := ""
	sc := bufio.NewScanner(strings.NewReader(out))
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := strings.TrimSpace(sc.Text())
		bad := func(err error) error { return fmt.Errorf("sysbench output line %d %q: %w", lineNo, line, err) }
		if m := sysbenchInterval.FindStringSubmatch(line); m != nil {
			in, err := parseSysbenchInterval(m)
			if err != nil {
				return r, bad(err)
			}
			r.Intervals = append(r.Intervals, in)
			continue
		}
		if m := sysbenchQueue.FindStringSubmatch(line); m != nil {
			// Each interval's queue line follows its report.
			if len(r.Intervals) == 0 || strconv.Itoa(int(r.Intervals[len(r.Intervals)-1].At/time.Second)) != m[1] {
				return r, bad(errors.New("a queue report without its interval's report"))
			}
			in := &r.Intervals[len(r.Intervals)-1]
			in.Queue, _ = strconv.Atoi(m[2]) // the pattern holds digits only
			in.Concurrency, _ = strconv.Atoi(m[3])
			continue
		}
		switch {
		case strings.HasPrefix(line, "Number of threads:"):
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "Number of threads:")))
			if err != nil {
				return r, bad(err)
			}
			r.Threads = n
			continue
		case strings.HasPrefix(line, "Target transaction rate:"):
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(line, "Target transaction rate:")), "/sec"))
			if err != nil {
				return r, bad(err)
			}
			r.Rate = n
			continue
		case strings.Contains(line, "The event queue is full"):
			r.QueueFull = true
			continue
		case strings.HasPrefix(line, "Latency (ms):"):
			section = "latency"
			continue
		case strings.HasPrefix(line, "Latency histogram (values are in milliseconds)"):
			section = "histogram"
			continue
		case section == "histogram":
			if m := sysbenchBucket.FindStringSubmatch(line); m != nil {
				v, err1 := strconv.ParseFloat(m[1], 64)
				n, err2 := strconv.ParseInt(m[2], 10, 64)
				if err := errors.Join(err1, err2); err != nil {
					return r, bad(err)
				}
				r.Histogram = append(r.Histogram, SysbenchBucket{Latency: millis(v), Count: n})
				continue
			}
			if !strings.HasPrefix(line, "value") {
				section = ""
			}
		case strings.HasPrefix(line, "Threads fairness:"):
			section = ""
			continue
		}
		if m := sysbenchCount.FindStringSubmatch(line); m != nil {
			n, err1 := strconv.ParseInt(m[2], 10, 64)
			rate, err2 := strconv.ParseFloat(m[3], 64)
			if err := errors.Join(err1, err2); err != nil {
				return r, bad(err)
			}
			switch m[1] {
			case "transactions":
				r.Transactions, r.TPS, have.transactions = n, rate, true
			case "queries":
				r.Queries, r.QPS = n, rate
			case "ignored errors":
				r.Errors = n
			case "reconnects":
				r.Reconnects = n
			}
			continue
		}
		m := sysbenchValue.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return r, bad(err)
		}
		switch name := m[1]; {
		case name == "total time":
			r.Time, have.time = seconds(v), true
		case name == "total number of events":
			r.Events = int64(v)
		case section != "latency":
		case name == "min":
			r.LatencyMin = millis(v)
		case name == "avg":
			r.LatencyAvg, have.latency = millis(v), true
		case name == "max":
			r.LatencyMax = millis(v)
		case strings.HasSuffix(name, "th percentile"):
			r.Percentile, _ = strconv.Atoi(strings.TrimSuffix(name, "th percentile")) // digits, by the pattern
			r.LatencyPercentile = millis(v)
		}
	}
	if err := sc.Err(); err != nil {
		return r, err
	}
	var missing []string
	for _, m := range []struct {
		ok   bool
		what string
	}{{have.transactions, "transactions"}, {have.time, "total time"}, {have.latency, "latency"}} {
		if !m.ok {
			missing = append(missing, m.what)
		}
	}
	switch {
	case len(missing) == 3:
		return r, ErrNoSysbenchReport
	case missing != nil:
		return r, fmt.Errorf("sysbench report without its %s", strings.Join(missing, ", "))
	}
	return r, nil
}

func parseSysbenchInterval(m []string) (SysbenchInterval, error) {
	at, err1 := strconv.Atoi(m[1])
	threads, err2 := strconv.Atoi(m[2])
	tps, err3 := strconv.ParseFloat(m[3], 64)
	qps, err4 := strconv.ParseFloat(m[4], 64)
	var lat float64
	var err5 error
	if m[6] != "" { // without --percentile
		lat, err5 = strconv.ParseFloat(m[6], 64)
	}
	return SysbenchInterval{At: time.Duration(at) * time.Second, Threads: threads, TPS: tps, QPS: qps,
		LatencyPercentile: millis(lat)}, errors.Join(err1, err2, err3, err4, err5)
}

func millis(v float64) time.Duration  { return time.Duration(v * float64(time.Millisecond)) }
func seconds(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }
