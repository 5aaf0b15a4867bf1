package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/iomatrix/iomatrix/answers/k8s"
	"github.com/iomatrix/iomatrix/internal/testenv"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/")

// decodeStrict decodes a YAML stream into k8s.io/api types, refusing
// unknown or duplicate fields, as an API server in strict field
// validation does.
func decodeStrict(t *testing.T, yamlText string) []runtime.Object {
	t.Helper()
	dec := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(yamlText)))
	var objs []runtime.Object
	for {
		doc, err := r.Read()
		if err != nil {
			break
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := dec.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("strict decoding: %v\n%s", err, doc)
		}
		objs = append(objs, obj)
	}
	return objs
}

// The manifests of a StorageClass run and of a nodes run, as golden
// files; each decodes strictly into the API types and carries what the
// Job needs: indexed completions, retries per index, a failure policy
// that ignores disruptions, a TTL, a pod template that passes the
// PodSecurity restricted profile as the admission plugin judges it.
func TestK8sManifest(t *testing.T) {
	profile := filepath.Join(t.TempDir(), "mine.yaml")
	if err := os.WriteFile(profile, []byte("name: mine\npatterns:\n  - {access: random, block_size: 4k, read_pct: 100, queue_depth: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		golden string
		args   []string
		check  func(t *testing.T, job *batchv1.Job, cm *corev1.ConfigMap)
	}{
		{"volumes.yaml", []string{"--storage-class", "standard", "--pods", "3", "--profile", "quick", "--name", "iomatrix-gp3", "-n", "bench", "--", "--runtime", "30s"},
			func(t *testing.T, job *batchv1.Job, cm *corev1.ConfigMap) {
				checkJob(t, job, 3, 1)
				if cm != nil {
					t.Error("a ConfigMap for a built-in profile")
				}
				v := volumeNamed(job, "data")
				if v == nil || v.Ephemeral == nil || v.Ephemeral.VolumeClaimTemplate == nil {
					t.Fatalf("no generic ephemeral volume: %+v", v)
				}
				claim := v.Ephemeral.VolumeClaimTemplate
				if *claim.Spec.StorageClassName != "standard" || claim.Spec.Resources.Requests.Storage().String() != "16Gi" ||
					*claim.Spec.VolumeMode != corev1.PersistentVolumeFilesystem || claim.Labels[k8s.LabelInstance] != "iomatrix-gp3" {
					t.Errorf("claim template %+v", claim)
				}
				args := job.Spec.Template.Spec.Containers[0].Args
				if !slices.Equal(args[:2], []string{"sweep", "/data/iomatrix.dat"}) || !containsSeq(args, "--profile", "quick") ||
					!containsSeq(args, "--size", "14745MiB") || !containsSeq(args, "--runtime", "30s") || !containsSeq(args, "--format", "json") {
					t.Errorf("args %q", args)
				}
				checkRestricted(t, job)
			}},
		{"nodes.yaml", []string{"--nodes", "node-role.kubernetes.io/storage,zone in (a,b)", "--pods", "4", "--host-path", "/var/lib/iomatrix",
			"--profile", profile, "--name", "iomatrix-nodes", "--ttl", "2h"},
			func(t *testing.T, job *batchv1.Job, cm *corev1.ConfigMap) {
				checkJob(t, job, 4, 4)
				if cm == nil || cm.Data[k8s.ProfileKey] == "" || !strings.Contains(cm.Data[k8s.ProfileKey], "name: mine") {
					t.Fatalf("profile ConfigMap %+v", cm)
				}
				if *job.Spec.TTLSecondsAfterFinished != 7200 {
					t.Errorf("ttl %d", *job.Spec.TTLSecondsAfterFinished)
				}
				spec := job.Spec.Template.Spec
				anti := spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
				if len(anti) != 1 || anti[0].TopologyKey != corev1.LabelHostname {
					t.Errorf("anti-affinity %+v", anti)
				}
				if len(spec.TopologySpreadConstraints) != 1 || spec.TopologySpreadConstraints[0].WhenUnsatisfiable != corev1.DoNotSchedule ||
					spec.TopologySpreadConstraints[0].TopologyKey != corev1.LabelHostname {
					t.Errorf("spread %+v", spec.TopologySpreadConstraints)
				}
				terms := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
				if len(terms) != 1 || len(terms[0].MatchExpressions) != 2 {
					t.Errorf("node affinity %+v", terms)
				}
				v := volumeNamed(job, "data")
				if v == nil || v.HostPath == nil || v.HostPath.Path != "/var/lib/iomatrix" {
					t.Errorf("host path volume %+v", v)
				}
				if p := volumeNamed(job, "profile"); p == nil || p.ConfigMap == nil || p.ConfigMap.Name != cm.Name {
					t.Errorf("profile volume %+v", p)
				}
				if args := spec.Containers[0].Args; !containsSeq(args, "--profile", "/etc/iomatrix/profile.yaml") || slices.Contains(args, "--size") {
					t.Errorf("args %q", args)
				}
			}},
		{"block-privileged.yaml", []string{"--storage-class", "fast", "--block", "--size", "100Gi", "--privileged", "--cap", "riops=2000", "--name", "iomatrix-cap"},
			func(t *testing.T, job *batchv1.Job, cm *corev1.ConfigMap) {
				checkJob(t, job, 1, 1)
				c := job.Spec.Template.Spec.Containers[0]
				if len(c.VolumeDevices) != 1 || c.VolumeDevices[0].DevicePath != k8s.DevicePath || c.Args[1] != k8s.DevicePath {
					t.Errorf("block device %+v, args %q", c.VolumeDevices, c.Args)
				}
				if !containsSeq(c.Args, "--cap", "riops=2000") || !slices.Contains(c.Args, "--allow-destructive") {
					t.Errorf("args %q", c.Args)
				}
				if c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged || volumeNamed(job, "cgroup") == nil {
					t.Errorf("a --privileged run is not privileged with the host's cgroup tree")
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.golden, func(t *testing.T) {
			r := runInProcess(append([]string{"k8s", "manifest"}, tc.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			out := strings.ReplaceAll(r.stdout, profile, "PROFILE")
			golden := filepath.Join("testdata", "k8s", tc.golden)
			if *updateGolden {
				testenv.Must(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				testenv.Must(t, os.WriteFile(golden, []byte(out), 0o644))
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if out != string(want) {
				t.Errorf("manifest differs from %s (go test -run TestK8sManifest -update):\n%s", golden, out)
			}
			var job *batchv1.Job
			var cm *corev1.ConfigMap
			for _, o := range decodeStrict(t, r.stdout) {
				switch o := o.(type) {
				case *batchv1.Job:
					job = o
				case *corev1.ConfigMap:
					cm = o
				default:
					t.Errorf("unexpected object %T", o)
				}
			}
			if job == nil {
				t.Fatal("no Job in the manifest")
			}
			tc.check(t, job, cm)
		})
	}
}

// The acceptance command, without --name: an Indexed Job with 3
// completions and a generic ephemeral volume of that class.
func TestK8sManifestAcceptance(t *testing.T) {
	r := runInProcess("k8s", "manifest", "--storage-class", "standard", "--pods", "3", "--profile", "quick")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	objs := decodeStrict(t, r.stdout)
	job, ok := objs[len(objs)-1].(*batchv1.Job)
	if len(objs) != 1 || !ok {
		t.Fatalf("%d objects, want one Job", len(objs))
	}
	checkJob(t, job, 3, 1)
	if v := volumeNamed(job, "data"); v == nil || v.Ephemeral == nil || *v.Ephemeral.VolumeClaimTemplate.Spec.StorageClassName != "standard" {
		t.Errorf("no ephemeral volume of class standard: %+v", v)
	}
	if !strings.HasPrefix(job.Name, "iomatrix-") {
		t.Errorf("default name %q", job.Name)
	}
}

// An empty --storage-class asks for no class: Kubernetes reads an
// explicit storageClassName "" as static binding to a pre-provisioned
// volume, while a claim without the field gets the cluster's default
// class.
func TestK8sManifestStorageClass(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want *string // nil: no storageClassName
	}{
		{[]string{"--storage-class", ""}, new("")},
		{[]string{"--storage-class=", "--pods", "2"}, new("")},
		{[]string{"--storage-class", "gp3"}, new("gp3")},
		{nil, nil},
	} {
		r := runInProcess(append([]string{"k8s", "manifest", "--name", "iomatrix-sc"}, tc.args...)...)
		if r.code != 0 {
			t.Fatalf("%q: exit %d: %s", tc.args, r.code, r.stderr)
		}
		objs := decodeStrict(t, r.stdout)
		job, ok := objs[len(objs)-1].(*batchv1.Job)
		if !ok {
			t.Fatalf("%q: no Job", tc.args)
		}
		v := volumeNamed(job, "data")
		if v == nil || v.Ephemeral == nil || v.Ephemeral.VolumeClaimTemplate == nil {
			t.Fatalf("%q: no generic ephemeral volume: %+v", tc.args, v)
		}
		got := v.Ephemeral.VolumeClaimTemplate.Spec.StorageClassName
		if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("%q: storageClassName %v, want %v", tc.args, deref(got), deref(tc.want))
		}
		line := "storageClassName: \"\"\n"
		if tc.want != nil && *tc.want == "" && !strings.Contains(r.stdout, line) {
			t.Errorf("%q: the YAML does not say %q:\n%s", tc.args, line, r.stdout)
		}
		if tc.want == nil && strings.Contains(r.stdout, "storageClassName") {
			t.Errorf("%q: a storageClassName without --storage-class:\n%s", tc.args, r.stdout)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<none>"
	}
	return fmt.Sprintf("%q", *s)
}

func checkJob(t *testing.T, job *batchv1.Job, completions, parallel int32) {
	t.Helper()
	s := job.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		t.Error("not an Indexed Job")
	}
	if *s.Completions != completions || *s.Parallelism != parallel {
		t.Errorf("completions %d, parallelism %d; want %d, %d", *s.Completions, *s.Parallelism, completions, parallel)
	}
	if s.BackoffLimitPerIndex == nil || *s.BackoffLimitPerIndex != 1 || s.TTLSecondsAfterFinished == nil {
		t.Error("no backoffLimitPerIndex or ttlSecondsAfterFinished")
	}
	ignores := false
	for _, r := range s.PodFailurePolicy.Rules {
		for _, c := range r.OnPodConditions {
			ignores = ignores || (c.Type == corev1.DisruptionTarget && r.Action == batchv1.PodFailurePolicyActionIgnore)
		}
	}
	if !ignores {
		t.Error("disruptions are counted as failures")
	}
	if s.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Error("restartPolicy must be Never with backoffLimitPerIndex")
	}
	for _, l := range []map[string]string{job.Labels, s.Template.Labels} {
		if l[k8s.LabelInstance] != job.Name || l[k8s.LabelName] != "iomatrix" {
			t.Errorf("labels %v", l)
		}
	}
}

// checkRestricted evaluates the pod template with the PodSecurity
// admission's own checks at the restricted level.
func checkRestricted(t *testing.T, job *batchv1.Job) {
	t.Helper()
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := job.Spec.Template
	res := policy.AggregateCheckResults(eval.EvaluatePod(psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()},
		&tmpl.ObjectMeta, &tmpl.Spec))
	if !res.Allowed {
		t.Errorf("the pod template fails PodSecurity restricted: %s", res.ForbiddenDetail())
	}
	sc := tmpl.Spec.SecurityContext
	if sc.FSGroup == nil || *sc.RunAsNonRoot != true || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v", sc)
	}
}

func volumeNamed(job *batchv1.Job, name string) *corev1.Volume {
	for i, v := range job.Spec.Template.Spec.Volumes {
		if v.Name == name {
			return &job.Spec.Template.Spec.Volumes[i]
		}
	}
	return nil
}

func containsSeq(args []string, a, b string) bool {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == a && args[i+1] == b {
			return true
		}
	}
	return false
}

// Bad flags exit 2 with one line naming the flag, and contact nothing.
func TestK8sBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"manifest", "--nodes", "all"}, "--pods"},
		{[]string{"manifest", "--pods", "2", "--host-path", "/x"}, "--host-path"},
		{[]string{"manifest", "--nodes", "all", "--pods", "2", "--host-path", "rel"}, "--host-path"},
		{[]string{"manifest", "--nodes", "all", "--pods", "2", "--host-path", "/x", "--block"}, "--block"},
		{[]string{"manifest", "--size", "1MiB"}, "--size"},
		{[]string{"manifest", "--size", "lots"}, "--size"},
		{[]string{"manifest", "--name", "Not_A_Name"}, "--name"},
		{[]string{"manifest", "--profile", "nope"}, "--profile"},
		{[]string{"manifest", "--pods", "-1"}, "--pods"},
		{[]string{"manifest", "--parallel", "0"}, "--parallel: 0 must be positive"},
		{[]string{"manifest", "--pods", "0"}, "--pods"},
		{[]string{"manifest", "--pods=0", "--storage-class", "gp3"}, "--pods"},
		{[]string{"manifest", "--nodes", "all", "--pods", "0"}, "--pods"},
		{[]string{"run", "--pods", "0"}, "--pods"},
		{[]string{"run", "--nodes", "all", "--pods", "0"}, "--pods"},
		{[]string{"manifest", "--ttl", "0s"}, "--ttl"},
		{[]string{"manifest", "--nodes", "a in (", "--pods", "2"}, "--nodes"},
		{[]string{"manifest", "--cap", "riops=100"}, "--privileged"},
		{[]string{"manifest", "--", "--cap", "riops=100"}, "--privileged"},
		{[]string{"manifest", "--", "--runtim", "5s"}, "--runtim"},
		{[]string{"manifest", "--", "--out", "x.json"}, "--out"},
		{[]string{"manifest", "--", "/dev/sda"}, "/dev/sda"},
		{[]string{"manifest", "stray"}, "--"},
		{[]string{"run", "--size", "x"}, "--size"},
		{[]string{"run", "--out-dir", "/nonexistent/dir"}, "--out-dir"},
		{[]string{"run", "--format", "xml"}, "--format"},
		{[]string{"collect"}, "collect"},
		{[]string{"run", "--kubeconfig", "/nonexistent/kubeconfig"}, "--kubeconfig"},
	} {
		r := runInProcess(append([]string{"k8s"}, tc.args...)...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != exitUsage || len(lines) != 1 || !strings.Contains(r.stderr, tc.want) || r.stdout != "" {
			t.Errorf("k8s %q: exit %d, stderr %q, stdout %d bytes; want exit 2 and one line naming %s", tc.args, r.code, r.stderr, len(r.stdout), tc.want)
		}
	}
}

// The kubeconfig is read as kubectl reads it: its context's namespace
// unless -n says otherwise; --context picks another context.
func TestKubeClientNamespace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	testenv.Must(t, os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: t}
contexts:
- name: bench
  context: {cluster: c, user: u, namespace: bench}
- name: plain
  context: {cluster: c, user: u}
current-context: bench
`), 0o600))
	for _, tc := range []struct {
		o    kubeOptions
		want string
	}{
		{kubeOptions{Kubeconfig: path}, "bench"},
		{kubeOptions{Kubeconfig: path, Namespace: "other"}, "other"},
		{kubeOptions{Kubeconfig: path, Context: "plain"}, "default"},
	} {
		c, ns, err := kubeClient(tc.o)
		if err != nil || c == nil || ns != tc.want {
			t.Errorf("%+v: namespace %q, err %v; want %q", tc.o, ns, err, tc.want)
		}
	}
	if _, _, err := kubeClient(kubeOptions{Kubeconfig: path, Context: "missing"}); err == nil || exitCode(err) != exitUsage {
		t.Errorf("a missing context: %v, want a usage error", err)
	}
}
