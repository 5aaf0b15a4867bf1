package iotest

import (
	"bufio"
	"bytes"
	"context"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/iotest/target"
	"github.com/iomatrix/iomatrix/results"
)

// An open loop on a rate profile issues each step's I/Os in that step,
// on a real target: the response log's completions, by second, follow
// the profile, and the result records it.
func TestProfileRun(t *testing.T) {
	testenv.Root(t)
	tg := openPlan(t, filepath.Join(testenv.DirectIODir(t), "profile.dat"), target.Options{Size: 64 << 20, Writes: true})
	prof := &RateProfile{StepNS: 1e9, Reads: []float64{300, 1500, 100, 0}, Writes: []float64{0, 500, 0, 200}}
	r, w := prof.MeanRates()
	p := results.Pattern{Access: results.Random, BlockSize: 4096, ReadPct: 80, QueueDepth: 16, Jobs: 1,
		Rate: results.Rate{ReadIOPS: r, WriteIOPS: w, Arrival: results.ArrivalUniform}}
	var log bytes.Buffer
	res, err := Run(context.Background(), tg, p, Options{Runtime: 4 * time.Second, Seed: 5, Engine: EngineUring, Profile: prof,
		LatLog: LatLog{Response: &log}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Rate == nil || res.Rate.ProfileSteps != 4 || res.Rate.ProfileStepNS != 1e9 || !res.Rate.Sustained || res.Rate.ScheduledIOs != 2600 {
		t.Fatalf("rate %+v", res.Rate)
	}
	// Completions by second and direction: within 2 % and 2 I/Os of the
	// step's (an I/O due at a step's end completes in the next).
	var got [4][2]int
	sc := bufio.NewScanner(&log)
	for sc.Scan() {
		f := strings.Split(sc.Text(), ", ")
		ms, err1 := strconv.ParseInt(f[0], 10, 64)
		dir, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil || ms < 0 {
			t.Fatalf("log line %q", sc.Text())
		}
		if s := ms / 1000; s < 4 {
			got[s][dir]++
		}
	}
	for s := range got {
		for d, want := range [2]float64{prof.Reads[s], prof.Writes[s]} {
			if math.Abs(float64(got[s][d])-want) > 0.02*want+2 {
				t.Errorf("second %d: %d %s, want %.0f", s, got[s][d], [2]string{"reads", "writes"}[d], want)
			}
		}
	}
	t.Logf("by second (reads, writes): %v", got)
}
