package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	k8stesting "k8s.io/client-go/testing"

	"github.com/iomatrix/iomatrix/answers/k8s"
	"github.com/iomatrix/iomatrix/answers/k8s/k8stest"
	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

// runK8s runs iomatrix in this process against a given client, with ctx
// standing for the signals; an error is worded as runMain words it.
func runK8s(ctx context.Context, client kubernetes.Interface, args ...string) cmdResult {
	var out, errb bytes.Buffer
	g := &globalOptions{stdout: &out, stderr: &errb, kubePoll: 50 * time.Millisecond,
		kube: func(kubeOptions) (kubernetes.Interface, string, error) { return client, "default", nil }}
	root := newRootCommand(g)
	root.SetArgs(args)
	code := exitOK
	if _, err := root.ExecuteContextC(ctx); err != nil {
		code = exitCode(err)
		errb.WriteString("iomatrix: " + message(flagError(err)) + "\n")
	}
	return cmdResult{code: code, stdout: out.String(), stderr: errb.String()}
}

// binaryKubelet runs a pod's container as the real iomatrix binary (this
// test binary re-executed) with the pod's command, args and env: each
// volume mount is a directory under root (a ConfigMap's one holds its
// data), and args under a mount path are rewritten to the directory.
// The pods of the indexes in broken get a file where their data volume
// should be. Each pod's stdout is kept in stdouts.
type binaryKubelet struct {
	t       *testing.T
	root    string
	broken  map[int]bool
	cluster *k8stest.Cluster
	stdouts sync.Map // pod name → []byte
}

func (b *binaryKubelet) run(ctx context.Context, pod *corev1.Pod, log *k8stest.Log) int {
	c := pod.Spec.Containers[0]
	dir := filepath.Join(b.root, pod.Name)
	index := k8s.IndexOf(pod)
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		host := filepath.Join(dir, m.Name)
		if err := os.MkdirAll(host, 0o755); err != nil {
			b.t.Error(err)
			return 125
		}
		for _, v := range pod.Spec.Volumes {
			if v.Name != m.Name || v.ConfigMap == nil {
				continue
			}
			cm, err := b.cluster.Fake.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
			if err != nil {
				return 125 // the kubelet would wait; the test then fails on the missing document
			}
			for k, data := range cm.Data {
				if err := os.WriteFile(filepath.Join(host, k), []byte(data), 0o644); err != nil {
					b.t.Error(err)
				}
			}
		}
		if m.Name == "data" && b.broken[index] {
			host = filepath.Join(dir, "not-a-directory")
			if err := os.WriteFile(host, nil, 0o644); err != nil {
				b.t.Error(err)
			}
		}
		mounts[m.MountPath] = host
	}
	args := append([]string(nil), c.Args...)
	for i, a := range args {
		for mp, host := range mounts {
			if a == mp || strings.HasPrefix(a, mp+"/") {
				args[i] = host + strings.TrimPrefix(a, mp)
			}
		}
	}
	if len(c.Command) != 1 || c.Command[0] != k8s.Binary {
		b.t.Errorf("command %q, want the image's binary", c.Command)
	}
	exe, err := os.Executable()
	if err != nil {
		b.t.Error(err)
		return 125
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), "IOMATRIX_TEST_MAIN=1")
	for _, e := range c.Env {
		cmd.Env = append(cmd.Env, e.Name+"="+e.Value)
	}
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.MultiWriter(log, &stdout), log
	err = cmd.Run()
	b.stdouts.Store(pod.Name, stdout.Bytes())
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode()
	}
	return 137 // killed
}

// testCtx ends the test's work after two minutes: a stuck stand-in
// cluster then fails the test instead of hanging the suite.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func newBinaryCluster(t *testing.T, broken map[int]bool) (*k8stest.Cluster, *binaryKubelet) {
	testenv.Integration(t)
	b := &binaryKubelet{t: t, root: t.TempDir(), broken: broken}
	c := k8stest.New([]string{"node-a", "node-b", "node-c"}, b.run)
	b.cluster = c
	t.Cleanup(c.Stop)
	return c, b
}

// A tiny profile, shipped to the pods in a ConfigMap, and sweep flags that
// keep each pod's sweep under a second or two.
func k8sTestProfile(t *testing.T) []string {
	profile := filepath.Join(t.TempDir(), "tiny.yaml")
	testenv.Must(t, os.WriteFile(profile, []byte("name: tiny\npatterns:\n"+
		"  - {access: random, block_size: 4k, read_pct: 100, queue_depth: 1}\n"+
		"  - {access: random, block_size: 4k, read_pct: 0, queue_depth: 4}\n"), 0o644))
	return []string{"--profile", profile, "--size", "64MiB"}
}

// The whole life of k8s run on the stand-in cluster: three volumes, the
// pods run the real binary, index 1 fails (its volume is a file: bad
// input, exit 2, which the failure policy never retries). The collected
// documents equal what the binaries printed; the failure is named with
// its pod, node and reason; the fleet of the two others is saved and
// printed; nothing is left in the cluster.
func TestK8sRunLifecycle(t *testing.T) {
	cluster, kubelet := newBinaryCluster(t, map[int]bool{1: true})
	out := t.TempDir()
	args := append([]string{"k8s", "run", "--name", "iomatrix-t", "--storage-class", "standard", "--pods", "3", "--parallel", "3",
		"--out-dir", out}, k8sTestProfile(t)...)
	r := runK8s(testCtx(t), cluster.Client, append(args, "--", "--runtime", "300ms", "--ramp", "0s")...)
	if r.code != exitFailure {
		t.Fatalf("exit %d, want 1 (one index failed)\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "index 1 (pod iomatrix-t-1-a0 on node node-b, 1 attempt) failed: exit status 2") {
		t.Errorf("the failed index is not named with its pod, node, attempts and exit status:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, "0 pending, 0 running, 2 done, 1 failed") {
		t.Errorf("no final status line:\n%s", r.stderr)
	}
	for _, i := range []int{0, 2} {
		pod := map[int]string{0: "iomatrix-t-0-a0", 2: "iomatrix-t-2-a0"}[i]
		raw, ok := kubelet.stdouts.Load(pod)
		if !ok {
			t.Fatalf("pod %s never ran", pod)
		}
		printed, err := results.ReadFrames(bytes.NewReader(raw.([]byte)))
		if err != nil {
			t.Fatalf("pod %s stdout: %v", pod, err)
		}
		saved, err := results.ReadDocumentFile(filepath.Join(out, "iomatrix-t-"+map[int]string{0: "0", 2: "2"}[i]+".json"))
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(printed.Document)
		b, _ := json.Marshal(saved)
		if !bytes.Equal(a, b) || len(saved.Results) != 2 {
			t.Errorf("index %d: the saved document differs from what the binary printed (%d results)", i, len(saved.Results))
		}
	}
	fleet, err := results.ReadDocumentFile(filepath.Join(out, "iomatrix-t-fleet.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(fleet.Members) != 2 || fleet.Members[0].Label != "vol-0@node-a" || fleet.Members[1].Label != "vol-2@node-c" {
		t.Errorf("fleet members %+v", fleet.Members)
	}
	if !strings.Contains(r.stdout, "vol-0@node-a") || !strings.Contains(r.stdout, "vol-2@node-c") {
		t.Errorf("the fleet report does not name its members:\n%s", r.stdout)
	}
	if left := cluster.Objects(); len(left) > 0 {
		t.Errorf("left in the cluster: %v", left)
	}
}

// Ctrl-C while the pods run: the command ends at once and deletes the
// Job, its pods and the profile's ConfigMap; the containers are stopped.
// The run is one pod per node: the cordoned node is named and skipped.
func TestK8sRunInterrupted(t *testing.T) {
	cluster, _ := newBinaryCluster(t, nil)
	node, err := cluster.Fake.CoreV1().Nodes().Get(context.Background(), "node-c", metav1.GetOptions{})
	testenv.Must(t, err)
	node.Spec.Unschedulable = true
	_, err = cluster.Fake.CoreV1().Nodes().Update(context.Background(), node, metav1.UpdateOptions{})
	testenv.Must(t, err)
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	go func() {
		// Interrupted once both pods run their sweep.
		if testenv.Poll(ctx, func() bool {
			pods, _ := cluster.Fake.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
			running := 0
			for _, p := range pods.Items {
				if p.Status.Phase == corev1.PodRunning && cluster.Log(p.Name) != nil && bytes.Contains(cluster.Log(p.Name).Bytes(), []byte("sweep")) {
					running++
				}
			}
			return running == 2
		}) {
			cancel()
		}
	}()
	args := []string{"k8s", "run", "--name", "iomatrix-int", "--nodes", "all", "--host-path", "/srv/bench", "--out-dir", t.TempDir(),
		"--profile", k8sTestProfile(t)[1], "--", "--runtime", "30s", "--ramp", "0s", "--size", "64MiB"}
	start := time.Now()
	r := runK8s(ctx, cluster.Client, args...)
	if !strings.Contains(r.stderr, "not measured: node-c (cordoned)") || !strings.Contains(r.stderr, "2 pods of") {
		t.Errorf("the cordoned node is not named, or not skipped:\n%s", r.stderr)
	}
	if r.code == exitOK || !strings.Contains(r.stderr, "context canceled") {
		t.Errorf("exit %d, want the interruption:\n%s", r.code, r.stderr)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("took %s: the interruption did not stop the run", took)
	}
	if left := cluster.Objects(); len(left) > 0 {
		t.Errorf("left in the cluster: %v", left)
	}
	if !strings.Contains(r.stderr, "deleted job/iomatrix-int") {
		t.Errorf("no deletion notice:\n%s", r.stderr)
	}
}

// An API error half-way (the Job refused after the ConfigMap was made)
// is exit 1 with the API's message, and what was made is deleted.
func TestK8sRunCreateRefused(t *testing.T) {
	cluster := k8stest.New([]string{"node-a"}, func(context.Context, *corev1.Pod, *k8stest.Log) int { return 0 })
	t.Cleanup(cluster.Stop)
	cluster.Fake.PrependReactor("create", "jobs", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New(`jobs.batch is forbidden: User "dev" cannot create resource "jobs"`)
	})
	args := append([]string{"k8s", "run", "--name", "iomatrix-ref", "--out-dir", t.TempDir()}, k8sTestProfile(t)...)
	r := runK8s(testCtx(t), cluster.Client, args...)
	if r.code != exitFailure || !strings.Contains(r.stderr, "forbidden") {
		t.Errorf("exit %d, stderr %q; want 1 and the API's refusal", r.code, r.stderr)
	}
	if left := cluster.Objects(); len(left) > 0 {
		t.Errorf("left in the cluster: %v", left)
	}
}

// Bad input is refused before anything is created: --pods 0 measures
// nothing, in a volumes run and in a nodes run.
func TestK8sRunNoPods(t *testing.T) {
	cluster := k8stest.New([]string{"node-a"}, func(context.Context, *corev1.Pod, *k8stest.Log) int { return 0 })
	t.Cleanup(cluster.Stop)
	for _, args := range [][]string{{"--pods", "0"}, {"--nodes", "all", "--pods", "0"}} {
		r := runK8s(testCtx(t), cluster.Client, append([]string{"k8s", "run", "--out-dir", t.TempDir()}, args...)...)
		if r.code != exitUsage || r.stderr != "iomatrix: --pods: 0 must be positive\n" {
			t.Errorf("%q: exit %d, stderr %q; want 2 and --pods refused", args, r.code, r.stderr)
		}
	}
	if left := cluster.Objects(); len(left) > 0 {
		t.Errorf("created: %v", left)
	}
}

// A Job applied from k8s manifest (decoded from its YAML, as kubectl
// apply does) is followed and collected by k8s collect, which reports a
// per-node fleet and, with --delete, leaves nothing.
func TestK8sCollectManifest(t *testing.T) {
	cluster, _ := newBinaryCluster(t, nil)
	m := runInProcess(append([]string{"k8s", "manifest", "--name", "iomatrix-gitops", "--nodes", "all", "--pods", "2", "--host-path", "/srv/bench"},
		append(k8sTestProfile(t)[:2], "--", "--runtime", "300ms", "--ramp", "0s", "--size", "64MiB")...)...)
	if m.code != 0 {
		t.Fatalf("manifest: exit %d: %s", m.code, m.stderr)
	}
	for _, o := range decodeStrict(t, m.stdout) {
		var err error
		switch o := o.(type) {
		case *batchv1.Job:
			o.Namespace = "default"
			_, err = cluster.Fake.BatchV1().Jobs("default").Create(context.Background(), o, metav1.CreateOptions{})
		case *corev1.ConfigMap:
			_, err = cluster.Fake.CoreV1().ConfigMaps("default").Create(context.Background(), o, metav1.CreateOptions{})
		}
		testenv.Must(t, err)
	}
	out := t.TempDir()
	r := runK8s(testCtx(t), cluster.Client, "k8s", "collect", "iomatrix-gitops", "--out-dir", out, "--delete", "--format", "markdown")
	if r.code != 0 {
		t.Fatalf("collect: exit %d:\n%s", r.code, r.stderr)
	}
	fleet, err := results.ReadDocumentFile(filepath.Join(out, "iomatrix-gitops-fleet.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(fleet.Members) != 2 || fleet.Members[0].Label != "node-a" || fleet.Members[1].Label != "node-b" {
		t.Errorf("members %+v, want the nodes", fleet.Members)
	}
	if !strings.Contains(r.stdout, "| node-a") {
		t.Errorf("markdown fleet report without its members:\n%s", r.stdout)
	}
	if left := cluster.Objects(); len(left) > 0 {
		t.Errorf("left in the cluster: %v", left)
	}
	notOurs := runK8s(context.Background(), cluster.Client, "k8s", "collect", "other-job")
	if notOurs.code != exitFailure || !strings.Contains(notOurs.stderr, "other-job") {
		t.Errorf("collect of a missing job: exit %d, %q", notOurs.code, notOurs.stderr)
	}
}
