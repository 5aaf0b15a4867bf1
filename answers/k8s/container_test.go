package k8s

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/iomatrix/iomatrix/internal/testenv"
	"github.com/iomatrix/iomatrix/results"
)

// podman runs podman with its whole state (configuration, storage,
// locks, network configuration) under one directory, so that a test
// leaves nothing behind and needs no change under /etc. On this
// project's machines podman needs runc and cgroupfs (crun refuses the
// hybrid cgroup layout) and no default ulimits (root there may not
// raise hard limits).
type podman struct {
	t    *testing.T
	root string
	env  []string
}

func newPodman(t *testing.T) *podman {
	testenv.Root(t)
	testenv.Command(t, "podman")
	testenv.Command(t, "runc")
	testenv.Command(t, "catatonit") // kube play's pause container
	root, err := os.MkdirTemp("", "iomatrix-podman-")
	testenv.Must(t, err)
	p := &podman{t: t, root: root}
	for _, d := range []string{"tmp", "net.d"} {
		testenv.Must(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	testenv.Must(t, os.WriteFile(filepath.Join(root, "containers.conf"), fmt.Appendf(nil, `[containers]
default_ulimits = []
log_driver = "k8s-file"
[network]
network_config_dir = "%[1]s/net.d"
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
tmp_dir = "%[1]s/libpod"
lock_type = "file"
image_copy_tmp_dir = "%[1]s/tmp"
`, root), 0o644))
	testenv.Must(t, os.WriteFile(filepath.Join(root, "storage.conf"), fmt.Appendf(nil, `[storage]
driver = "overlay"
graphroot = "%[1]s/storage"
runroot = "%[1]s/run"
`, root), 0o644))
	p.env = append(os.Environ(), "CONTAINERS_CONF="+filepath.Join(root, "containers.conf"),
		"CONTAINERS_STORAGE_CONF="+filepath.Join(root, "storage.conf"), "TMPDIR="+filepath.Join(root, "tmp"))
	t.Cleanup(p.cleanup)
	return p
}

func (p *podman) run(args ...string) (string, error) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "podman", args...)
	cmd.Env = p.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("podman %s: %w\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

// cleanup removes every container, pod and image, the state directory,
// and the empty cgroups podman leaves on a hybrid layout.
func (p *podman) cleanup() {
	if _, err := p.run("system", "reset", "--force"); err != nil {
		p.t.Error(err)
	}
	if err := os.RemoveAll(p.root); err != nil {
		p.t.Error(err)
	}
	dirs, _ := filepath.Glob("/sys/fs/cgroup/*/libpod_parent")
	for _, d := range dirs {
		// Deepest first; rmdir removes only empty cgroups, so another
		// podman's are safe.
		_ = exec.Command("find", d, "-depth", "-type", "d", "-exec", "rmdir", "{}", "+").Run()
	}
}

// The image built from the Containerfile runs the pod template that
// `k8s run` generates, with its command, args, env, user, security
// context and volumes (a host directory, the profile's ConfigMap, the
// work emptyDir), under podman kube play; the log is read by the same
// decoder as a pod's.
func TestContainerRunsPodTemplate(t *testing.T) {
	p := newPodman(t)
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	testenv.Must(t, err)

	// A static binary: the image has no libc. CI builds it before the
	// suite (IOMATRIX_STATIC_BINARY), so that this build of the whole
	// tree without the race detector does not compete for the CPUs with
	// the timing-sensitive tests; elsewhere the test builds it.
	ctxDir := t.TempDir()
	bin := filepath.Join(ctxDir, "iomatrix")
	if prebuilt := os.Getenv("IOMATRIX_STATIC_BINARY"); prebuilt != "" {
		data, err := os.ReadFile(prebuilt)
		testenv.Must(t, err)
		testenv.Must(t, os.WriteFile(bin, data, 0o755))
	} else {
		build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/iomatrix")
		build.Dir, build.Env = repo, append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	if _, err := p.run("build", "-q", "-t", "localhost/iomatrix:test", "-f", filepath.Join(repo, "Containerfile"), ctxDir); err != nil {
		t.Fatal(err)
	}

	data := filepath.Join(p.root, "data") // the node's directory
	testenv.Must(t, os.MkdirAll(data, 0o777))
	testenv.Must(t, os.Chmod(data, 0o777)) // podman ignores fsGroup
	s := &Spec{Name: "iomatrix-podman", Image: "localhost/iomatrix:test", Pods: 1, Parallel: 1, PerNode: true, HostPath: data,
		ProfileYAML: []byte("name: tiny\npatterns:\n  - {access: random, block_size: 4k, read_pct: 100, queue_depth: 1}\n" +
			"  - {access: random, block_size: 4k, read_pct: 0, queue_depth: 4}\n"),
		SweepArgs: []string{"--runtime", "300ms", "--ramp", "0s", "--size", "64MiB"}, BackoffLimitPerIndex: 1, TTL: time.Hour}
	tmpl := s.Job().Spec.Template
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "iomatrix-podman-0", Labels: tmpl.Labels}, Spec: tmpl.Spec}
	// What the Job controller adds to the pod of index 0.
	pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, corev1.EnvVar{Name: "JOB_COMPLETION_INDEX", Value: "0"})
	var manifest bytes.Buffer
	testenv.Must(t, WriteYAML(&manifest, []runtime.Object{s.ProfileConfigMap(), pod}))
	podYAML := filepath.Join(p.root, "pod.yaml")
	testenv.Must(t, os.WriteFile(podYAML, manifest.Bytes(), 0o644))

	if _, err := p.run("kube", "play", "--network", "none", podYAML); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = p.run("kube", "down", podYAML) }()
	container := pod.Name + "-" + pod.Spec.Containers[0].Name
	code, err := p.run("wait", container)
	if err != nil {
		t.Fatal(err)
	}
	log, err := p.run("logs", container)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(code) != "0" {
		t.Fatalf("the container exited %s:\n%s", strings.TrimSpace(code), log)
	}
	f, err := results.ReadFrames(strings.NewReader(log))
	if err != nil {
		t.Fatalf("the pod's log: %v\n%s", err, log)
	}
	doc := f.Document
	if len(doc.Results) != 2 || doc.Target.Path != TestFile || doc.Settings.Profile != "tiny" {
		t.Errorf("document: %d results, target %s, profile %s", len(doc.Results), doc.Target.Path, doc.Settings.Profile)
	}
	for _, r := range doc.Results {
		if r.Total.IOs == 0 {
			t.Errorf("%s: no I/O", r.Name)
		}
	}
	if f.Progress == nil || f.Progress.Done != 2 || f.Progress.Total != 2 {
		t.Errorf("last progress frame %+v", f.Progress)
	}
	// The container ran as the image's user, on the node's directory.
	fi, err := os.Stat(filepath.Join(data, "iomatrix.dat"))
	testenv.Must(t, err)
	if uid := statUID(fi); uid != UserID {
		t.Errorf("test file owned by uid %d, want %d", uid, UserID)
	}
	t.Logf("engine in the container: %s", doc.Settings.Engine)
}

func statUID(fi os.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
