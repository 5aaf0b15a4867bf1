package testenv

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

func readSample(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	Must(t, err)
	return string(data)
}

// The samples are sysbench 1.0.20's oltp_read_write on MariaDB on a
// CapacityDisk, 2 threads for 5 s: at 20 transactions a second on 400
// IOPS, and at 300 on 100 IOPS.
func TestParseSysbench(t *testing.T) {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	keeps, err := ParseSysbench(readSample(t, "sysbench-rate-keeps-up.txt"))
	Must(t, err)
	want := SysbenchReport{Threads: 2, Rate: 20, Transactions: 95, TPS: 18.85, Queries: 1900, QPS: 376.93,
		Time: 5040 * time.Millisecond, Events: 95,
		LatencyMin: ms(1.50), LatencyAvg: ms(19.63), LatencyMax: ms(158.95), Percentile: 95, LatencyPercentile: ms(127.81)}
	intervals := keeps.Intervals
	keeps.Intervals = nil
	if !reflect.DeepEqual(keeps, want) {
		t.Errorf("keeping up:\n got %+v\nwant %+v", keeps, want)
	}
	if len(intervals) != 5 || intervals[4] != (SysbenchInterval{At: 5 * time.Second, Threads: 2, TPS: 15, QPS: 299.95, LatencyPercentile: ms(80.03)}) ||
		intervals[1].Concurrency != 1 {
		t.Errorf("keeping up: intervals %+v", intervals)
	}
	keeps.Intervals = intervals
	if keeps.Behind() || keeps.MaxQueue() != 0 {
		t.Errorf("keeping up: behind %v, longest queue %d", keeps.Behind(), keeps.MaxQueue())
	}

	behind, err := ParseSysbench(readSample(t, "sysbench-rate-behind.txt"))
	Must(t, err)
	if behind.Rate != 300 || behind.TPS != 25.02 || behind.LatencyPercentile != ms(4517.90) || !behind.Behind() ||
		behind.MaxQueue() != 1357 || len(behind.Intervals) != 5 || behind.Intervals[0].Queue != 252 {
		t.Errorf("behind: %+v, behind %v, longest queue %d", behind, behind.Behind(), behind.MaxQueue())
	}
}

func TestParseSysbenchVariants(t *testing.T) {
	sample := readSample(t, "sysbench-rate-behind.txt")
	// As fast as it goes: no target rate, no queue.
	free := regexp.MustCompile(`(?m)^(Target transaction rate|\[ \d+s \] queue length).*\n`).ReplaceAllString(sample, "")
	r, err := ParseSysbench(free)
	Must(t, err)
	if r.Rate != 0 || r.Behind() || len(r.Intervals) != 5 || r.Transactions != 126 {
		t.Errorf("no rate: %+v", r)
	}
	noPercentile := regexp.MustCompile(`(?m)^ *95th percentile: .*$`).ReplaceAllString(sample, "         percentile stats:               disabled")
	if r, err := ParseSysbench(noPercentile); err != nil || r.Percentile != 0 || r.LatencyPercentile != 0 {
		t.Errorf("no percentile: %+v, %v", r, err)
	}
	noLatency := regexp.MustCompile(`lat \(ms,95%\): [\d.]+ `).ReplaceAllString(sample, "")
	if r, err := ParseSysbench(noLatency); err != nil || len(r.Intervals) != 5 || r.Intervals[4].Queue != 1357 || r.Intervals[4].LatencyPercentile != 0 {
		t.Errorf("intervals without latency: %+v, %v", r, err)
	}
	full := "The event queue is full. This means the worker threads are unable to keep up with the specified event generation rate"
	if r, err := ParseSysbench(strings.Replace(sample, "SQL statistics:", "FATAL: "+full+"\nSQL statistics:", 1)); err != nil || !r.QueueFull || !r.Behind() {
		t.Errorf("queue full: %+v, %v", r, err)
	}
	cut := sample[:strings.Index(sample, "Latency (ms):")]
	if _, err := ParseSysbench(cut); err == nil || !strings.Contains(err.Error(), "latency") {
		t.Errorf("cut before the latency: %v", err)
	}
	if _, err := ParseSysbench(`{"fio version": "fio-3.33", "jobs": []}`); !errors.Is(err, ErrNoSysbenchReport) {
		t.Errorf("fio's output: %v", err)
	}
	// With --histogram: its rows (sysbench's "%12.3f |%-40s %lu"), read
	// until the section ends; a percentile is the bucket that holds it.
	hist := "Latency histogram (values are in milliseconds)\n" +
		"       value  ------------- distribution ------------- count\n" +
		"       2.222 |**                                       2\n" +
		"       5.000 |****************************************  95\n" +
		"     150.290 |*                                        3\n" +
		" \n"
	if r, err := ParseSysbench(strings.Replace(sample, "SQL statistics:", hist+"SQL statistics:", 1)); err != nil || len(r.Histogram) != 3 ||
		r.Histogram[2] != (SysbenchBucket{Latency: 150290 * time.Microsecond, Count: 3}) || r.HistogramPercentile(2) != 2222*time.Microsecond ||
		r.HistogramPercentile(50) != 5*time.Millisecond || r.HistogramPercentile(97) != 5*time.Millisecond || r.HistogramPercentile(99) != 150290*time.Microsecond ||
		r.Transactions != 126 {
		t.Errorf("histogram: %+v, %v", r.Histogram, err)
	}
	if r, _ := ParseSysbench(sample); r.Histogram != nil || r.HistogramPercentile(99) != 0 {
		t.Errorf("no histogram: %+v", r.Histogram)
	}
	orphan := strings.Replace(sample, "[ 1s ] thds:", "[ 0s ] thds:", 1)
	if _, err := ParseSysbench(orphan); err == nil || !strings.Contains(err.Error(), "line 15") {
		t.Errorf("a queue line without its interval: %v", err)
	}
}
