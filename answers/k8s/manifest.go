// Package k8s runs sweeps as a Kubernetes Indexed Job: it checks the
// options, builds the objects (typed k8s.io/api values, never YAML
// templates), creates them through client-go, follows the pods, reads
// each pod's results document from its log, saves and reports them, and
// deletes what it created (Run, CollectJob). It knows nothing of the
// engine: a pod runs the iomatrix binary of the image, and a results
// document is whatever results.ReadFrames finds in the pod's log.
package k8s

import (
	"fmt"
	"path"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/iomatrix/iomatrix/internal/sysfs"
)

// Labels put on every object a run creates (Job, pods, ConfigMap, and the
// PVCs of the pods' ephemeral volumes), so that cleanup finds them all.
const (
	LabelName     = "app.kubernetes.io/name"
	LabelInstance = "app.kubernetes.io/instance"
	appName       = "iomatrix"
)

// Paths inside the pod.
const (
	Binary        = "/iomatrix"     // the image's entry point
	DataDir       = "/data"         // the measured volume or host directory
	DevicePath    = "/dev/iomatrix" // the measured raw block volume
	WorkDir       = "/work"         // the results file and its checkpoints
	ProfileDir    = "/etc/iomatrix" // a profile file shipped in a ConfigMap
	ProfileKey    = "profile.yaml"  // its key
	ResultsFile   = WorkDir + "/results.json"
	TestFile      = DataDir + "/iomatrix.dat"
	containerName = "iomatrix"
)

// UserID is the non-root user and group the pods run as: the image's.
const UserID = 65532

// Spec is one fleet run: what each pod measures, where, and how the Job
// retries and cleans up. Options.Spec builds it from user input, checked;
// Objects trusts it.
type Spec struct {
	Name      string // of the Job, and the instance label of everything
	Namespace string
	Image     string

	// Profile is a built-in profile name; ProfileYAML, when set, is a
	// profile file's content instead, shipped in a ConfigMap.
	Profile     string
	ProfileYAML []byte
	// SweepArgs are further flags of `iomatrix sweep`, passed verbatim.
	SweepArgs []string

	// Pods is the Job's completions: one per volume, or one per node.
	Pods     int
	Parallel int // pods at a time

	// Volumes: each pod gets a generic ephemeral volume of this class and
	// size. StorageClass nil is the cluster's default class; "" is no
	// class: the claim binds only to a pre-provisioned PersistentVolume
	// without one.
	StorageClass *string
	VolumeSize   resource.Quantity
	Block        bool // volumeMode Block: the sweep measures the raw device
	// FileSize is the test file on a filesystem volume, or "" to leave it
	// to the sweep.
	FileSize string

	// Nodes: one pod per node (required anti-affinity and a topology
	// spread on the hostname), on the nodes that NodeSelector's
	// requirements select (none: every node).
	PerNode      bool
	NodeSelector []corev1.NodeSelectorRequirement
	// HostPath is a directory on each node to measure instead of an
	// ephemeral volume.
	HostPath string

	// Privileged runs the pods as root, privileged, with the host's
	// cgroup tree: what a cap inside the pod needs. It leaves the
	// PodSecurity restricted profile.
	Privileged bool

	BackoffLimitPerIndex int32
	TTL                  time.Duration // ttlSecondsAfterFinished
}

// Labels are the labels of everything the run creates.
func (s *Spec) Labels() map[string]string {
	return map[string]string{LabelName: appName, LabelInstance: s.Name}
}

// Selector selects everything the run creates.
func (s *Spec) Selector() string {
	return LabelName + "=" + appName + "," + LabelInstance + "=" + s.Name
}

// ProfileConfigMapName is the name of the ConfigMap holding a profile file.
func (s *Spec) ProfileConfigMapName() string { return s.Name + "-profile" }

// Objects are the objects of the run, in the order to create them: the
// profile's ConfigMap (only for a profile file), then the Job.
func (s *Spec) Objects() []runtime.Object {
	var objs []runtime.Object
	if cm := s.ProfileConfigMap(); cm != nil {
		objs = append(objs, cm)
	}
	return append(objs, s.Job())
}

// ProfileConfigMap is the ConfigMap that ships a profile file, or nil.
func (s *Spec) ProfileConfigMap() *corev1.ConfigMap {
	if s.ProfileYAML == nil {
		return nil
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: s.meta(s.ProfileConfigMapName()),
		Data:       map[string]string{ProfileKey: string(s.ProfileYAML)},
	}
}

func (s *Spec) meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: s.Namespace, Labels: s.Labels()}
}

// Job is the Indexed Job: one completion per volume or node, each pod
// retried on its own (backoffLimitPerIndex), disruptions not counted as
// failures, bad input (exit status 2) never retried.
func (s *Spec) Job() *batchv1.Job {
	indexed := batchv1.IndexedCompletion
	ttl := int32(s.TTL / time.Second)
	job := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: s.meta(s.Name),
		Spec: batchv1.JobSpec{
			CompletionMode:          &indexed,
			Completions:             ptr(int32(s.Pods)),
			Parallelism:             ptr(int32(s.Parallel)),
			BackoffLimitPerIndex:    ptr(s.BackoffLimitPerIndex),
			TTLSecondsAfterFinished: &ttl,
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				{ // an eviction, preemption or node drain is not the disk's fault
					Action:          batchv1.PodFailurePolicyActionIgnore,
					OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
				},
				{ // exit status 2 is bad input: the retry would fail the same way
					Action: batchv1.PodFailurePolicyActionFailIndex,
					OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
						ContainerName: ptr(containerName),
						Operator:      batchv1.PodFailurePolicyOnExitCodesOpIn,
						Values:        []int32{2},
					},
				},
			}},
			Template: s.podTemplate(),
		},
	}
	return job
}

func (s *Spec) podTemplate() corev1.PodTemplateSpec {
	c := corev1.Container{
		Name:            containerName,
		Image:           s.Image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{Binary},
		Args:            s.sweepArgs(),
		SecurityContext: s.containerSecurity(),
		// A failed pod's reason then holds the last lines of its log: the
		// error iomatrix printed.
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		VolumeMounts:             []corev1.VolumeMount{{Name: "work", MountPath: WorkDir}},
	}
	volumes := []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	switch {
	case s.HostPath != "":
		volumes = append(volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: s.HostPath, Type: ptr(corev1.HostPathDirectory)}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: DataDir})
	case s.Block:
		volumes = append(volumes, s.ephemeralVolume())
		c.VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: DevicePath}}
	default:
		volumes = append(volumes, s.ephemeralVolume())
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "data", MountPath: DataDir})
	}
	if s.ProfileYAML != nil {
		volumes = append(volumes, corev1.Volume{Name: "profile", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: s.ProfileConfigMapName()}}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "profile", MountPath: ProfileDir, ReadOnly: true})
	}
	if s.Privileged {
		volumes = append(volumes, corev1.Volume{Name: "cgroup", VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: sysfs.CgroupRoot, Type: ptr(corev1.HostPathDirectory)}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "cgroup", MountPath: sysfs.CgroupRoot})
	}
	spec := corev1.PodSpec{
		RestartPolicy:   corev1.RestartPolicyNever, // a retry is a new pod (backoffLimitPerIndex)
		Containers:      []corev1.Container{c},
		Volumes:         volumes,
		SecurityContext: s.podSecurity(),
		// No service account token: the pod talks to no API.
		AutomountServiceAccountToken: ptr(false),
		EnableServiceLinks:           ptr(false),
	}
	if s.PerNode {
		s.onePerNode(&spec)
	}
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: s.Labels()}, Spec: spec}
}

// onePerNode places one pod per node among the selected ones.
func (s *Spec) onePerNode(spec *corev1.PodSpec) {
	mine := &metav1.LabelSelector{MatchLabels: s.Labels()}
	spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: mine, TopologyKey: corev1.LabelHostname}},
	}}
	if len(s.NodeSelector) > 0 {
		spec.Affinity.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: s.NodeSelector}}}}
	}
	spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: mine,
	}}
}

func (s *Spec) ephemeralVolume() corev1.Volume {
	mode := corev1.PersistentVolumeFilesystem
	if s.Block {
		mode = corev1.PersistentVolumeBlock
	}
	claim := corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		VolumeMode:  &mode,
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: s.VolumeSize}},
	}
	if s.StorageClass != nil { // "" is kept: Kubernetes reads it as no class
		claim.StorageClassName = ptr(*s.StorageClass)
	}
	return corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
		VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
			ObjectMeta: metav1.ObjectMeta{Labels: s.Labels()},
			Spec:       claim,
		}}}}
}

// sweepArgs is the pod's command line after the binary: a framed JSON
// sweep of the target, then the caller's flags; a raw block volume is
// written to.
func (s *Spec) sweepArgs() []string {
	target := TestFile
	if s.Block {
		target = DevicePath
	}
	profile := s.Profile
	if s.ProfileYAML != nil {
		profile = path.Join(ProfileDir, ProfileKey)
	}
	args := []string{"sweep", target, "--profile", profile, "--format", "json", "--frame", "--out", ResultsFile}
	if s.FileSize != "" && !s.Block {
		args = append(args, "--size", s.FileSize)
	}
	args = append(args, s.SweepArgs...)
	if s.Block { // the volume is the pod's own, made to be measured
		args = append(args, "--allow-destructive")
	}
	return args
}

func (s *Spec) podSecurity() *corev1.PodSecurityContext {
	seccomp := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	if s.Privileged {
		return &corev1.PodSecurityContext{SeccompProfile: seccomp}
	}
	return &corev1.PodSecurityContext{
		RunAsNonRoot:        ptr(true),
		RunAsUser:           ptr(int64(UserID)),
		RunAsGroup:          ptr(int64(UserID)),
		FSGroup:             ptr(int64(UserID)),
		FSGroupChangePolicy: ptr(corev1.FSGroupChangeOnRootMismatch),
		SeccompProfile:      seccomp,
	}
}

// containerSecurity passes the PodSecurity restricted profile, unless the
// run is privileged.
func (s *Spec) containerSecurity() *corev1.SecurityContext {
	if s.Privileged {
		return &corev1.SecurityContext{Privileged: ptr(true), RunAsUser: ptr(int64(0)), RunAsNonRoot: ptr(false)}
	}
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		ReadOnlyRootFilesystem:   ptr(true),
	}
}

func ptr[T any](v T) *T { return &v }

// IndexOf is the completion index of a pod of the Job, or -1.
func IndexOf(pod *corev1.Pod) int {
	v, ok := pod.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		v, ok = pod.Labels[batchv1.JobCompletionIndexAnnotation]
	}
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(v)
	if err != nil {
		return -1
	}
	return i
}

// String names the run for messages.
func (s *Spec) String() string { return fmt.Sprintf("job/%s in namespace %s", s.Name, s.Namespace) }
