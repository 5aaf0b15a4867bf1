// Package k8stest is a small stand-in for a Kubernetes cluster around
// client-go's fake clientset: a Job controller that creates the pods of
// each index of an Indexed Job as the real one does (labels, completion
// index annotation and JOB_COMPLETION_INDEX, parallelism, retries per
// index, the pod failure policy's FailIndex on exit codes, the Job's
// final status), a kubelet that runs each pod through a function the test
// gives, and a reactor that serves what the pod wrote as its log.
//
// What it does not do, and a live cluster must show: scheduling
// (affinity and spread are not evaluated: pods go to the nodes in turn),
// admission, volume provisioning, image pulls, and garbage collection
// (deleting a Job or a pod deletes nothing else here).
package k8stest

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
)

// Kubelet runs a pod's one container: it writes the container's output to
// log (stdout and stderr, as a container runtime interleaves them) and
// returns its exit status. ctx ends when the pod is deleted.
type Kubelet func(ctx context.Context, pod *corev1.Pod, log *Log) (exitCode int)

// Log is one pod's log, readable while it is written.
type Log struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// Bytes is the log so far.
func (l *Log) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.buf.Bytes())
}

// Cluster is the stand-in. Create it with New, hand Client to the code
// under test, and Stop it at the end.
type Cluster struct {
	// Fake is the clientset holding the objects; Client wraps it so that
	// pod logs reach the log reactor.
	Fake   *fake.Clientset
	Client kubernetes.Interface
	Nodes  []string

	kubelet Kubelet
	ctx     context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup

	// mu guards the maps below; never held across a call to Fake (see
	// reapDeleted).
	mu      sync.Mutex
	logs    map[string]*Log                  // by pod name
	logReqs map[*corev1.PodLogOptions]string // log request → pod name
	running map[string]context.CancelFunc    // pods whose container runs
	started map[string]int                   // pods created per job/index
	created time.Time                        // creation clock
}

// New starts a cluster of the given nodes (Node objects labelled with
// their host name) whose pods run through kubelet.
func New(nodes []string, kubelet Kubelet) *Cluster {
	ctx, stop := context.WithCancel(context.Background())
	c := &Cluster{
		Fake: fake.NewClientset(), Nodes: nodes, kubelet: kubelet, ctx: ctx, stop: stop,
		logs: map[string]*Log{}, logReqs: map[*corev1.PodLogOptions]string{}, running: map[string]context.CancelFunc{},
		started: map[string]int{}, created: time.Unix(1_800_000_000, 0),
	}
	c.Client = clientset{c.Fake, c}
	for _, n := range nodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{corev1.LabelHostname: n}}}
		if _, err := c.Fake.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			panic(err) // an empty fake refuses nothing
		}
	}
	c.Fake.PrependReactor("get", "pods", c.serveLog)
	c.wg.Add(1)
	go c.controller()
	return c
}

// Stop ends the controller and every running container.
func (c *Cluster) Stop() {
	c.stop()
	c.wg.Wait()
}

// Objects lists what the cluster holds of the kinds a run creates, as
// "kind/name".
func (c *Cluster) Objects() []string {
	ctx := context.Background()
	var out []string
	if l, err := c.Fake.BatchV1().Jobs("").List(ctx, metav1.ListOptions{}); err == nil {
		for _, o := range l.Items {
			out = append(out, "job/"+o.Name)
		}
	}
	if l, err := c.Fake.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err == nil {
		for _, o := range l.Items {
			out = append(out, "pod/"+o.Name)
		}
	}
	if l, err := c.Fake.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{}); err == nil {
		for _, o := range l.Items {
			out = append(out, "persistentvolumeclaim/"+o.Name)
		}
	}
	if l, err := c.Fake.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{}); err == nil {
		for _, o := range l.Items {
			out = append(out, "configmap/"+o.Name)
		}
	}
	return out
}

// Log returns the log of a pod, or nil.
func (c *Cluster) Log(pod string) *Log {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.logs[pod]
}

// The fake's GetLogs does not tell its reactor which pod the log is of:
// the wrappers below remember the pod of each request's options.
type clientset struct {
	*fake.Clientset
	c *Cluster
}

func (cs clientset) CoreV1() corev1client.CoreV1Interface {
	return coreV1{cs.Clientset.CoreV1(), cs.c}
}

type coreV1 struct {
	corev1client.CoreV1Interface
	c *Cluster
}

func (x coreV1) Pods(ns string) corev1client.PodInterface {
	return pods{x.CoreV1Interface.Pods(ns), x.c}
}

type pods struct {
	corev1client.PodInterface
	c *Cluster
}

func (p pods) GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request {
	o := &corev1.PodLogOptions{}
	if opts != nil {
		o = opts.DeepCopy()
	}
	p.c.mu.Lock()
	p.c.logReqs[o] = name
	p.c.mu.Unlock()
	return p.PodInterface.GetLogs(name, o)
}

// serveLog is the reactor for pods/log: the pod's log so far, its last
// TailLines lines if asked; NotFound for a pod that never ran.
func (c *Cluster) serveLog(action k8stesting.Action) (bool, runtime.Object, error) {
	if action.GetSubresource() != "log" {
		return false, nil, nil
	}
	ga, ok := action.(k8stesting.GenericAction)
	if !ok {
		return true, nil, fmt.Errorf("log request %T without options", action)
	}
	opts, _ := ga.GetValue().(*corev1.PodLogOptions)
	c.mu.Lock()
	name := c.logReqs[opts]
	delete(c.logReqs, opts)
	l := c.logs[name]
	c.mu.Unlock()
	if l == nil {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods/log"}, name)
	}
	b := l.Bytes()
	if opts != nil && opts.TailLines != nil {
		lines := strings.SplitAfter(string(b), "\n")
		if n := int(*opts.TailLines); len(lines) > n+1 {
			b = []byte(strings.Join(lines[len(lines)-n-1:], ""))
		}
	}
	return true, &runtime.Unknown{Raw: b}, nil
}

// controller is the Job controller's loop, and the kubelet's start of the
// pods it creates.
func (c *Cluster) controller() {
	defer c.wg.Done()
	for {
		select {
		case <-c.ctx.Done():
			c.mu.Lock()
			for _, cancel := range c.running {
				cancel()
			}
			c.mu.Unlock()
			return
		case <-time.After(10 * time.Millisecond):
		}
		c.reapDeleted()
		jobs, err := c.Fake.BatchV1().Jobs("").List(c.ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for i := range jobs.Items {
			c.sync(&jobs.Items[i])
		}
	}
}

// reapDeleted stops the containers of pods that were deleted. It asks
// the fake without holding c.mu: the log reactor takes c.mu while the
// fake holds its own lock, so holding c.mu across a call to the fake
// would deadlock against it.
func (c *Cluster) reapDeleted() {
	c.mu.Lock()
	names := make([]string, 0, len(c.running))
	for name := range c.running {
		names = append(names, name)
	}
	c.mu.Unlock()
	for _, name := range names {
		ns, pod, _ := strings.Cut(name, "/")
		if _, err := c.Fake.CoreV1().Pods(ns).Get(c.ctx, pod, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			continue
		}
		c.mu.Lock()
		if cancel, ok := c.running[name]; ok {
			cancel()
			delete(c.running, name)
		}
		c.mu.Unlock()
	}
}

type indexState struct {
	active, failed int
	succeeded      bool
	failIndex      bool // the pod failure policy failed it
}

// sync does for one Job what the Job controller does.
func (c *Cluster) sync(job *batchv1.Job) {
	if jobFinished(job) || job.Spec.CompletionMode == nil || *job.Spec.CompletionMode != batchv1.IndexedCompletion {
		return
	}
	ctx := c.ctx
	pods, err := c.Fake.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job.Name})
	if err != nil {
		return
	}
	completions := int(*job.Spec.Completions)
	state := make([]indexState, completions)
	active := 0
	for _, p := range pods.Items {
		i, err := strconv.Atoi(p.Annotations[batchv1.JobCompletionIndexAnnotation])
		if err != nil || i >= completions {
			continue
		}
		switch p.Status.Phase {
		case corev1.PodSucceeded:
			state[i].succeeded = true
		case corev1.PodFailed:
			state[i].failed++
			if failIndex(job, &p) {
				state[i].failIndex = true
			}
		default:
			state[i].active++
			active++
		}
	}
	limit := int32(0)
	if job.Spec.BackoffLimitPerIndex != nil {
		limit = *job.Spec.BackoffLimitPerIndex
	}
	var done, failedIdx []int
	for i, s := range state {
		switch {
		case s.succeeded:
			done = append(done, i)
		case s.active > 0:
		case s.failIndex || int32(s.failed) > limit:
			failedIdx = append(failedIdx, i)
		case active < int(*job.Spec.Parallelism):
			c.createPod(job, i)
			active++
		}
	}
	if len(done)+len(failedIdx) < completions {
		return
	}
	job = job.DeepCopy()
	job.Status.Succeeded, job.Status.Failed = int32(len(done)), int32(len(failedIdx))
	job.Status.CompletedIndexes, job.Status.FailedIndexes = indexList(done), ptrTo(indexList(failedIdx))
	cond := batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "Completed"}
	if len(failedIdx) > 0 {
		cond = batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "FailedIndexes"}
	}
	job.Status.Conditions = append(job.Status.Conditions, cond)
	_, _ = c.Fake.BatchV1().Jobs(job.Namespace).UpdateStatus(ctx, job, metav1.UpdateOptions{})
}

func jobFinished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed {
			return true
		}
	}
	return false
}

// failIndex applies the pod failure policy's FailIndex rules on exit codes.
func failIndex(job *batchv1.Job, p *corev1.Pod) bool {
	if job.Spec.PodFailurePolicy == nil {
		return false
	}
	for _, r := range job.Spec.PodFailurePolicy.Rules {
		if r.Action != batchv1.PodFailurePolicyActionFailIndex || r.OnExitCodes == nil {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			t := cs.State.Terminated
			if t == nil || (r.OnExitCodes.ContainerName != nil && *r.OnExitCodes.ContainerName != cs.Name) {
				continue
			}
			in := false
			for _, v := range r.OnExitCodes.Values {
				in = in || v == t.ExitCode
			}
			if in == (r.OnExitCodes.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn) {
				return true
			}
		}
	}
	return false
}

func indexList(idx []int) string {
	s := make([]string, len(idx))
	for i, v := range idx {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func ptrTo[T any](v T) *T { return &v }

// createPod creates the next attempt of index i as the Job controller
// does, with the PVCs of its ephemeral volumes as the ephemeral volume
// controller does, and starts it on a node.
func (c *Cluster) createPod(job *batchv1.Job, i int) {
	key := fmt.Sprintf("%s/%s/%d", job.Namespace, job.Name, i)
	c.mu.Lock()
	attempt := c.started[key]
	c.started[key]++
	c.created = c.created.Add(time.Second)
	created := c.created
	c.mu.Unlock()

	tmpl := job.Spec.Template.DeepCopy()
	pod := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	pod.Name = fmt.Sprintf("%s-%d-a%d", job.Name, i, attempt)
	pod.Namespace = job.Namespace
	pod.CreationTimestamp = metav1.NewTime(created)
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[batchv1.JobNameLabel] = job.Name
	pod.Labels[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(i)
	pod.Annotations = map[string]string{batchv1.JobCompletionIndexAnnotation: strconv.Itoa(i)}
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptrTo(true)}}
	for j := range pod.Spec.Containers {
		pod.Spec.Containers[j].Env = append(pod.Spec.Containers[j].Env, corev1.EnvVar{Name: "JOB_COMPLETION_INDEX", Value: strconv.Itoa(i)})
	}
	pod.Spec.NodeName = c.Nodes[i%len(c.Nodes)]
	pod.Status.Phase = corev1.PodPending
	pod, err := c.Fake.CoreV1().Pods(job.Namespace).Create(c.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return
	}
	for _, v := range pod.Spec.Volumes {
		if v.Ephemeral == nil || v.Ephemeral.VolumeClaimTemplate == nil {
			continue
		}
		t := v.Ephemeral.VolumeClaimTemplate
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: *t.ObjectMeta.DeepCopy(), Spec: *t.Spec.DeepCopy()}
		pvc.Name, pvc.Namespace = pod.Name+"-"+v.Name, pod.Namespace
		pvc.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptrTo(true)}}
		_, _ = c.Fake.CoreV1().PersistentVolumeClaims(pod.Namespace).Create(c.ctx, pvc, metav1.CreateOptions{})
	}
	c.start(pod)
}

// start runs the pod's container, then records how it ended.
func (c *Cluster) start(pod *corev1.Pod) {
	ctx, cancel := context.WithCancel(c.ctx)
	log := &Log{}
	c.mu.Lock()
	c.logs[pod.Name] = log
	c.running[pod.Namespace+"/"+pod.Name] = cancel
	c.mu.Unlock()
	pod = pod.DeepCopy()
	pod.Status.Phase = corev1.PodRunning
	pods := c.Fake.CoreV1().Pods(pod.Namespace)
	pod, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	if err != nil {
		cancel()
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer cancel()
		code := c.kubelet(ctx, pod, log)
		if ctx.Err() != nil {
			return // deleted, or the cluster stopped
		}
		pod = pod.DeepCopy()
		term := &corev1.ContainerStateTerminated{ExitCode: int32(code), Reason: "Completed"}
		pod.Status.Phase = corev1.PodSucceeded
		if code != 0 {
			pod.Status.Phase = corev1.PodFailed
			term.Reason = "Error"
			// terminationMessagePolicy FallbackToLogsOnError: the log's tail
			if msg := log.Bytes(); len(msg) > 2048 {
				term.Message = string(msg[len(msg)-2048:])
			} else {
				term.Message = string(msg)
			}
		}
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: pod.Spec.Containers[0].Name, State: corev1.ContainerState{Terminated: term}}}
		_, _ = pods.UpdateStatus(context.Background(), pod, metav1.UpdateOptions{})
		c.mu.Lock()
		delete(c.running, pod.Namespace+"/"+pod.Name)
		c.mu.Unlock()
	}()
}
