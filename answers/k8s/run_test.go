package k8s

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/iomatrix/iomatrix/answers/k8s/k8stest"
	"github.com/iomatrix/iomatrix/results"
)

// A scripted kubelet: what each index prints and how it exits, per attempt.
type script map[int][]func(log *k8stest.Log) int

func (s script) kubelet() k8stest.Kubelet {
	var mu sync.Mutex
	attempts := map[int]int{}
	return func(ctx context.Context, pod *corev1.Pod, log *k8stest.Log) int {
		i := IndexOf(pod)
		mu.Lock()
		a := attempts[i]
		attempts[i]++
		mu.Unlock()
		steps := s[i]
		return steps[min(a, len(steps)-1)](log)
	}
}

func succeeds(doc *results.Document) func(*k8stest.Log) int {
	return func(log *k8stest.Log) int {
		fmt.Fprintln(log, "iomatrix: sweep tiny: 1 of 1 pattern to run")
		_ = results.WriteProgressFrame(log, results.FrameProgress{Done: 1, Total: 1, Pattern: "rand-4k-r100-qd1", IOPS: 10})
		_ = results.WriteDocumentFrames(log, doc)
		return 0
	}
}

func fails(code int, msg string) func(*k8stest.Log) int {
	return func(log *k8stest.Log) int {
		fmt.Fprintln(log, msg)
		return code
	}
}

// Collect, after the Job ran on the stand-in cluster: a document per
// succeeded index, the succeeded retry of a failed attempt, exit status 2
// failing its index at once (the failure policy), retries exhausted, a
// succeeded pod whose log holds no document; Delete leaves nothing.
func TestCollectOutcomes(t *testing.T) {
	doc := &results.Document{SchemaVersion: results.SchemaVersion, Tool: results.Tool{Name: "iomatrix"}, Host: results.Host{Hostname: "pod"}}
	s := script{
		0: {succeeds(doc)},
		1: {fails(1, "iomatrix: read /data/iomatrix.dat: input/output error"), succeeds(doc)},
		2: {fails(2, "iomatrix: --runtime: \"x\" is not a duration")},
		3: {fails(1, "first"), fails(1, "iomatrix: write: no space left on device")},
		4: {fails(0, "a log without frames")},
	}
	c := k8stest.New([]string{"n1", "n2"}, s.kubelet())
	defer c.Stop()
	spec := &Spec{Name: "t", Namespace: "default", Image: "img", Profile: "quick", Pods: 5, Parallel: 5,
		VolumeSize: resource.MustParse("1Gi"), BackoffLimitPerIndex: 1, TTL: time.Hour}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a stuck stand-in fails, not hangs
	defer cancel()
	if err := Create(ctx, c.Client, spec); err != nil {
		t.Fatal(err)
	}
	var last Status
	w := &Watcher{Client: c.Client, Namespace: "default", Job: "t", Poll: 10 * time.Millisecond, Status: func(st Status) { last = st }}
	if err := w.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if last.Succeeded != 3 || last.Failed != 4 || last.Running+last.Pending != 0 {
		t.Errorf("last status %s, want 3 done (0, 1, 4) and 4 failed pods", last.Count())
	}
	members, err := Collect(ctx, c.Client, "default", "t", 5)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		attempts int
		ok       bool
		failure  string
	}{
		{1, true, ""},
		{2, true, ""},
		{1, false, `exit status 2: iomatrix: --runtime: "x" is not a duration`},
		{2, false, "exit status 1: iomatrix: write: no space left on device"},
		{1, false, "succeeded, but no results document in the log"},
	}
	for i, m := range members {
		w := want[i]
		if m.Attempts != w.attempts || (m.Document != nil) != w.ok || m.Failure != w.failure || m.Node == "" {
			t.Errorf("index %d: %d attempts, document %v, node %q, failure %q; want %d, %v, %q",
				i, m.Attempts, m.Document != nil, m.Node, m.Failure, w.attempts, w.ok, w.failure)
		}
	}
	if err := Delete(ctx, c.Client, "default", "t", nil); err != nil {
		t.Fatal(err)
	}
	if left := c.Objects(); len(left) > 0 {
		t.Errorf("left: %v", left)
	}
}

// The progress line of a running pod is its last progress frame, read
// from the tail of its log.
func TestWatcherShowsLastPattern(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	c := k8stest.New([]string{"n1"}, func(ctx context.Context, pod *corev1.Pod, log *k8stest.Log) int {
		// One write: a poll between the frames would see the first one
		// (it did, once, on a loaded machine), and the question is which
		// frame of a tail holding both is shown.
		var b bytes.Buffer
		_ = results.WriteProgressFrame(&b, results.FrameProgress{Done: 1, Total: 3, Pattern: "seq-read-1m-qd8", IOPS: 700})
		fmt.Fprintln(&b, "[1/3] seq-read-1m-qd8: 700 IOPS")
		_ = results.WriteProgressFrame(&b, results.FrameProgress{Done: 2, Total: 3, Pattern: "rand-4k-r100-qd1", IOPS: 9000})
		_, _ = log.Write(b.Bytes())
		select {
		case <-release:
		case <-ctx.Done():
		}
		return 0
	})
	defer c.Stop()
	spec := &Spec{Name: "w", Namespace: "default", Image: "img", Profile: "quick", Pods: 1, Parallel: 1, VolumeSize: resource.MustParse("1Gi"), TTL: time.Hour}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := Create(ctx, c.Client, spec); err != nil {
		t.Fatal(err)
	}
	var seen, lines []string
	w := &Watcher{Client: c.Client, Namespace: "default", Job: "w", Poll: 10 * time.Millisecond, Progress: func(line string) {
		lines = append(lines, line)
	}, Status: func(st Status) {
		for _, p := range st.Pods {
			if p.Progress != nil {
				seen = append(seen, fmt.Sprintf("%d/%d %s", p.Progress.Done, p.Progress.Total, p.Progress.Pattern))
				if len(seen) == 3 { // three looks at the same state
					once.Do(func() { close(release) })
				}
			}
		}
	}}
	if err := w.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if len(seen) == 0 || seen[0] != "2/3 rand-4k-r100-qd1" {
		t.Errorf("progress seen %q, want the last frame", strings.Join(seen, ", "))
	}
	// One line per change, however many looks saw the same.
	running := "job/w: 0 pending, 1 running, 0 done, 0 failed; 0@n1 [2/3] rand-4k-r100-qd1"
	if n := len(slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return l != running })); n != 1 ||
		lines[len(lines)-1] != "job/w: 0 pending, 0 running, 1 done, 0 failed" {
		t.Errorf("progress lines, want %q once and the end last:\n%s", running, strings.Join(lines, "\n"))
	}
	for i := 1; i < len(lines); i++ {
		if lines[i] == lines[i-1] {
			t.Errorf("line %d repeats the one before: %q", i, lines[i])
		}
	}
	if err := Delete(ctx, c.Client, "default", "w", nil); err != nil {
		t.Fatal(err)
	}
}
