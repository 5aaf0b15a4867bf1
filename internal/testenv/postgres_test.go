package testenv

import (
	"slices"
	"testing"
	"time"
)

// pgbench 15's report of a run at --rate.
const pgbenchReport = `pgbench (15.18 (Debian 15.18-0+deb12u1))
transaction type: <builtin: TPC-B (sort of)>
scaling factor: 10
query mode: simple
number of clients: 2
number of threads: 1
maximum number of tries: 1
duration: 5 s
number of transactions actually processed: 493
number of failed transactions: 0 (0.000%)
latency average = 4.512 ms
latency stddev = 2.104 ms
rate limit schedule lag: avg 0.321 (max 5.432) ms
initial connection time = 3.276 ms
tps = 98.751234 (without initial connection time)
`

func TestParsePgbench(t *testing.T) {
	r, err := ParsePgbench(pgbenchReport)
	if err != nil || r.Transactions != 493 || r.Failed != 0 || r.TPS != 98.751234 ||
		r.LatencyAvg != 4512*time.Microsecond || r.Lag != 321*time.Microsecond {
		t.Errorf("ParsePgbench: %+v, %v", r, err)
	}
	if _, err := ParsePgbench("pgbench: error: connection to server failed\n"); err == nil {
		t.Error("a failed run's output accepted")
	}
}

func TestParsePgbenchLog(t *testing.T) {
	log := "0 0 4512 0 1764777600 123456 321\n1 0 skipped 0 1764777600 223456 9000\n0 1 812 0 1764777601 5 0\n\n"
	lat, err := ParsePgbenchLog([]byte(log))
	if err != nil || !slices.Equal(lat, []time.Duration{4512 * time.Microsecond, 812 * time.Microsecond}) {
		t.Errorf("ParsePgbenchLog: %v, %v", lat, err)
	}
	for _, bad := range []string{"0 0 4512\n", "0 0 x 0 1 2\n"} {
		if _, err := ParsePgbenchLog([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	v := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}
	if p := percentile(v, 95); p != 19 {
		t.Errorf("p95 of 1..20: %v", p)
	}
}
