package k8s

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/results"
)

func node(name string, labels map[string]string, change func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if change != nil {
		change(n)
	}
	return n
}

// Cordoned nodes and nodes whose taints keep pods off are named and not
// counted; a selector of none that can run a pod is bad input for nodes.
func TestCountNodes(t *testing.T) {
	ssd := map[string]string{"disk": "ssd"}
	c := fake.NewClientset(
		node("a", ssd, nil),
		node("b", ssd, func(n *corev1.Node) { n.Spec.Unschedulable = true }),
		node("c", nil, nil),
		node("d", ssd, func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectPreferNoSchedule}, {Key: "gpu", Effect: corev1.TaintEffectNoSchedule}}
		}),
		node("e", ssd, func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectPreferNoSchedule}}
		}),
		node("f", map[string]string{"disk": "hdd"}, func(n *corev1.Node) {
			n.Spec.Taints = []corev1.Taint{{Key: "old", Effect: corev1.TaintEffectNoExecute}}
		}),
	)
	ctx := context.Background()
	for _, tc := range []struct {
		selector string
		n        int
		skipped  []string
		bad      bool
	}{
		{"all", 3, []string{"b (cordoned)", "d (taint gpu:NoSchedule)", "f (taint old:NoExecute)"}, false},
		{"disk=ssd", 2, []string{"b (cordoned)", "d (taint gpu:NoSchedule)"}, false},
		{"disk=hdd", 0, []string{"f (taint old:NoExecute)"}, true},
		{"disk=nvme", 0, nil, true},
	} {
		got, err := CountNodes(ctx, c, tc.selector)
		var ie *fault.InputError
		if bad := errors.As(err, &ie) && ie.Option == "nodes"; bad != tc.bad || (err != nil && !tc.bad) {
			t.Errorf("%s: error %v, want bad input: %v", tc.selector, err, tc.bad)
		}
		if got.Schedulable != tc.n || !slices.Equal(got.Skipped, tc.skipped) {
			t.Errorf("%s: %d schedulable, skipped %q; want %d, %q", tc.selector, got.Schedulable, got.Skipped, tc.n, tc.skipped)
		}
	}
	if _, err := CountNodes(ctx, c, "disk=hdd"); err == nil || err.Error() != `nodes: "disk=hdd" selects no schedulable node (of 1)` {
		t.Errorf("no schedulable node: %v", err)
	}
}

// The progress line: counts, the last pattern of each running pod, why
// each pending one waits.
func TestStatusLine(t *testing.T) {
	st := Status{Pending: 1, Running: 1, Succeeded: 1, Pods: []PodState{
		{Index: 0, Node: "n1", Phase: corev1.PodSucceeded},
		{Index: 1, Node: "n2", Phase: corev1.PodRunning, Progress: &results.FrameProgress{Done: 3, Total: 137, Pattern: "rand-4k-r100-qd32"}},
		{Index: 2, Phase: corev1.PodRunning},
		{Index: 3, Phase: corev1.PodPending, Waiting: "Unschedulable: 0/3 nodes are available"},
		{Index: 4, Phase: corev1.PodPending},
	}}
	want := "job/j: 1 pending, 1 running, 1 done, 0 failed; 1@n2 [3/137] rand-4k-r100-qd32; 3 pending: Unschedulable: 0/3 nodes are available"
	if got := st.Line("j"); got != want {
		t.Errorf("line\n%q, want\n%q", got, want)
	}
}

// save writes each document to its file and says so; a failed index is
// named with its pod, node and attempts. The labels name volumes with
// their index, nodes alone. Failed says what a partial or empty harvest
// is.
func TestSave(t *testing.T) {
	doc := &results.Document{SchemaVersion: results.SchemaVersion, Tool: results.Tool{Name: "iomatrix"},
		Results: []results.Result{{Name: "rand-4k-r100-qd1"}}}
	members := []Member{
		{Index: 0, Pod: "j-0-a", Node: "n1", Attempts: 1, Document: doc},
		{Index: 1, Pod: "j-1-b", Attempts: 2, Failure: "exit status 2: bad"},
		{Index: 2, Failure: "no pod was created for this index"},
		{Index: 3, Pod: "j-3-a", Attempts: 1, Document: doc},
	}
	for _, perNode := range []bool{false, true} {
		dir := t.TempDir()
		var notes []string
		saved, err := save(dir, "j", members, perNode, func(s string) { notes = append(notes, s) })
		if err != nil {
			t.Fatal(err)
		}
		wantNotes := []string{
			"index 0 (node n1): 1 result saved to " + filepath.Join(dir, "j-0.json"),
			"index 1 (pod j-1-b on node unknown, 2 attempts) failed: exit status 2: bad",
			"index 2 failed: no pod was created for this index",
			"index 3 (node unknown): 1 result saved to " + filepath.Join(dir, "j-3.json"),
		}
		if !slices.Equal(notes, wantNotes) {
			t.Errorf("notes\n%q, want\n%q", notes, wantNotes)
		}
		labels := []string{"vol-0@n1", "vol-3@unknown"}
		if perNode {
			labels = []string{"n1", "unknown"}
		}
		if len(saved) != 2 || saved[0].Label != labels[0] || saved[1].Label != labels[1] || saved[1].Index != 3 {
			t.Fatalf("saved %+v, want labels %q", saved, labels)
		}
		for _, s := range saved {
			d, err := results.ReadDocumentFile(s.Path)
			if err != nil || len(d.Results) != 1 {
				t.Errorf("%s: %v", s.Path, err)
			}
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 2 {
			t.Errorf("%d files in the output directory, want 2", len(entries))
		}
	}
	if got := fleetFile("out", "j"); got != filepath.Join("out", "j-fleet.json") {
		t.Errorf("fleet file %s", got)
	}
	for _, tc := range []struct {
		members []Member
		want    string
	}{
		{members, "job/j: 2 of 4 indexes failed; the others' results are kept"},
		{members[1:3], "job/j: no pod gave results (2 failed)"},
		{nil, "job/j: no pod gave results (0 failed)"},
		{members[:1], ""},
	} {
		got := ""
		if err := failed("j", tc.members); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%d members: %q, want %q", len(tc.members), got, tc.want)
		}
	}
}

// Find knows a Job made from a Spec, per volume or per node, and refuses
// any other as bad input.
func TestFind(t *testing.T) {
	vols := &Spec{Name: "vols", Namespace: "ns", Image: "img", Profile: "quick", Pods: 3, Parallel: 1,
		VolumeSize: resource.MustParse("1Gi"), TTL: time.Hour}
	nodes := &Spec{Name: "nodes", Namespace: "ns", Image: "img", Profile: "quick", Pods: 2, Parallel: 2,
		PerNode: true, HostPath: "/srv", TTL: time.Hour}
	other := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "ns"}, Spec: batchv1.JobSpec{Completions: new(int32(2))}}
	c := fake.NewClientset([]runtime.Object{vols.Job(), nodes.Job(), other}...)
	ctx := context.Background()
	for _, tc := range []struct {
		job  string
		want Found
	}{
		{"vols", Found{Indexes: 3}},
		{"nodes", Found{Indexes: 2, PerNode: true}},
	} {
		got, err := Find(ctx, c, "ns", tc.job)
		if err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.job, got, err, tc.want)
		}
	}
	_, err := Find(ctx, c, "ns", "other")
	var ie *fault.InputError
	if !errors.Is(err, ErrNotIomatrixJob) || !errors.As(err, &ie) ||
		err.Error() != "job/other: not an iomatrix Job (made by iomatrix k8s manifest or run)" {
		t.Errorf("another Job: %v, want bad input: not an iomatrix Job", err)
	}
	if _, err := Find(ctx, c, "ns", "missing"); err == nil || errors.As(err, &ie) {
		t.Errorf("a missing Job: %v, want the API's error", err)
	}
}
