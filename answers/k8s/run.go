package k8s

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/results"
)

// Create creates the run's objects. On an error, what was created before
// it is left for Delete.
func Create(ctx context.Context, c kubernetes.Interface, s *Spec) error {
	if cm := s.ProfileConfigMap(); cm != nil {
		if _, err := c.CoreV1().ConfigMaps(s.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create configmap/%s in namespace %s: %w", cm.Name, s.Namespace, err)
		}
	}
	if _, err := c.BatchV1().Jobs(s.Namespace).Create(ctx, s.Job(), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create %s: %w", s, err)
	}
	return nil
}

// PodState is where one pod of the Job is.
type PodState struct {
	Index    int
	Pod      string
	Node     string
	Phase    corev1.PodPhase
	Progress *results.FrameProgress // its last finished pattern, or nil
	Waiting  string                 // why a pending pod waits, if said
}

// Status is the Job's pods at one poll.
type Status struct {
	Pending, Running, Succeeded, Failed int
	Pods                                []PodState // by index, then age
}

// Count is Status as one line.
func (st Status) Count() string {
	return fmt.Sprintf("%d pending, %d running, %d done, %d failed", st.Pending, st.Running, st.Succeeded, st.Failed)
}

// Line is the Job's progress as one line: the counts, each running
// pod's last finished pattern, and why each pending pod waits.
func (st Status) Line(job string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "job/%s: %s", job, st.Count())
	for _, p := range st.Pods {
		switch {
		case p.Progress != nil:
			fmt.Fprintf(&b, "; %d@%s [%d/%d] %s", p.Index, p.Node, p.Progress.Done, p.Progress.Total, p.Progress.Pattern)
		case p.Phase == corev1.PodPending && p.Waiting != "":
			fmt.Fprintf(&b, "; %d pending: %s", p.Index, p.Waiting)
		}
	}
	return b.String()
}

// Watcher follows a Job until it finishes.
type Watcher struct {
	Client    kubernetes.Interface
	Namespace string
	Job       string
	Poll      time.Duration // between looks; 2s when zero
	// Status, if set, is called after every look.
	Status func(Status)
	// Progress, if set, is called with the Status Line of a look that
	// differs from the one before.
	Progress func(line string)
}

// ErrJobGone is returned when the Job disappears while it is followed.
var ErrJobGone = errors.New("the job was deleted")

// Wait returns when the Job is complete or failed (all its indexes are
// finished), or when ctx ends.
func (w *Watcher) Wait(ctx context.Context) error {
	poll := w.Poll
	if poll <= 0 {
		poll = 2 * time.Second
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	last := ""
	for {
		job, err := w.Client.BatchV1().Jobs(w.Namespace).Get(ctx, w.Job, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Errorf("job/%s in namespace %s: %w", w.Job, w.Namespace, ErrJobGone)
		case err != nil:
			return fmt.Errorf("get job/%s: %w", w.Job, err)
		}
		if w.Status != nil || w.Progress != nil {
			st, err := w.look(ctx)
			if err != nil {
				return err
			}
			if w.Status != nil {
				w.Status(st)
			}
			if w.Progress != nil {
				if line := st.Line(w.Job); line != last {
					w.Progress(line)
					last = line
				}
			}
		}
		if Finished(job) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// Finished says whether the Job has ended, complete or failed.
func Finished(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func (w *Watcher) look(ctx context.Context) (Status, error) {
	pods, err := listPods(ctx, w.Client, w.Namespace, w.Job)
	if err != nil {
		return Status{}, err
	}
	var st Status
	for _, p := range pods {
		ps := PodState{Index: IndexOf(&p), Pod: p.Name, Node: p.Spec.NodeName, Phase: p.Status.Phase}
		switch p.Status.Phase {
		case corev1.PodPending:
			st.Pending++
			ps.Waiting = waitingReason(&p)
		case corev1.PodRunning:
			st.Running++
			ps.Progress = lastProgress(ctx, w.Client, &p)
		case corev1.PodSucceeded:
			st.Succeeded++
		case corev1.PodFailed:
			st.Failed++
		}
		st.Pods = append(st.Pods, ps)
	}
	return st, nil
}

// listPods lists the Job's pods by index, then creation.
func listPods(ctx context.Context, c kubernetes.Interface, ns, job string) ([]corev1.Pod, error) {
	list, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=" + job})
	if err != nil {
		return nil, fmt.Errorf("list the pods of job/%s: %w", job, err)
	}
	pods := list.Items
	slices.SortStableFunc(pods, func(a, b corev1.Pod) int {
		if d := IndexOf(&a) - IndexOf(&b); d != 0 {
			return d
		}
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	return pods, nil
}

// waitingReason is why a pending pod waits: unschedulable, pulling, a
// volume not bound.
func waitingReason(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Message != "" {
			return c.Reason + ": " + c.Message
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return strings.TrimSpace(w.Reason + ": " + w.Message)
		}
	}
	return ""
}

// lastProgress reads the last progress frame in the tail of a pod's log;
// nil when there is none yet or the log cannot be read now.
func lastProgress(ctx context.Context, c kubernetes.Interface, p *corev1.Pod) *results.FrameProgress {
	tail := int64(200)
	rc, err := c.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: containerName, TailLines: &tail}).Stream(ctx)
	if err != nil {
		return nil
	}
	defer rc.Close()
	f, _ := results.ReadFrames(rc)
	return f.Progress
}

// Member is what one index of the Job gave.
type Member struct {
	Index    int
	Pod      string // the pod it was read from (the last attempt)
	Node     string
	Attempts int
	Document *results.Document // nil when the index failed
	// Failure says why the index gave no document: the pod's exit status
	// and last words, an eviction, a log without a document.
	Failure string
}

// Collect reads the results document of every index from the log of its
// succeeded pod, and says why for every index without one. indexes is the
// Job's completions. Only an error of the API itself is returned: a
// failed index is a Member with a Failure.
func Collect(ctx context.Context, c kubernetes.Interface, ns, job string, indexes int) ([]Member, error) {
	pods, err := listPods(ctx, c, ns, job)
	if err != nil {
		return nil, err
	}
	members := make([]Member, indexes)
	for i := range members {
		members[i] = Member{Index: i, Failure: "no pod was created for this index"}
	}
	for _, p := range pods {
		i := IndexOf(&p)
		if i < 0 || i >= indexes {
			continue
		}
		m := &members[i]
		m.Attempts++
		if m.Document != nil {
			continue // a succeeded attempt stands
		}
		m.Pod, m.Node = p.Name, p.Spec.NodeName
		switch p.Status.Phase {
		case corev1.PodSucceeded:
			m.Document, m.Failure = nil, ""
			if err := readDocument(ctx, c, &p, m); err != nil {
				return nil, err
			}
		case corev1.PodFailed:
			m.Failure = podFailure(&p)
		default:
			m.Failure = "still " + strings.ToLower(string(p.Status.Phase))
			if w := waitingReason(&p); w != "" {
				m.Failure += " (" + w + ")"
			}
		}
	}
	return members, nil
}

func readDocument(ctx context.Context, c kubernetes.Interface, p *corev1.Pod, m *Member) error {
	rc, err := c.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: containerName}).Stream(ctx)
	if err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsBadRequest(err) {
			m.Failure = "its log cannot be read: " + err.Error()
			return nil
		}
		return fmt.Errorf("read the log of pod/%s: %w", p.Name, err)
	}
	defer rc.Close()
	f, err := results.ReadFrames(rc)
	if err != nil {
		m.Failure = "succeeded, but " + err.Error()
		return nil
	}
	m.Document = f.Document
	return nil
}

// podFailure says why a pod failed, as the kubelet recorded it: the
// container's exit status with its last words (FallbackToLogsOnError),
// or the pod's own reason (Evicted, DeadlineExceeded …).
func podFailure(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		t := cs.State.Terminated
		if t == nil || cs.Name != containerName {
			continue
		}
		why := fmt.Sprintf("exit status %d", t.ExitCode)
		if t.Reason != "" && t.Reason != "Error" {
			why += " (" + t.Reason + ")"
		}
		if msg := lastLine(t.Message); msg != "" {
			why += ": " + msg
		}
		return why
	}
	if p.Status.Reason != "" {
		return strings.TrimSpace(p.Status.Reason + ": " + p.Status.Message)
	}
	return "failed, without a reason recorded"
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// deleteTimeout bounds Delete's wait, which goes on once its caller's
// context is cancelled: what a run created is deleted after Ctrl-C too.
const deleteTimeout = 2 * time.Minute

// Delete deletes everything the run created, and waits until the API no
// longer lists it, for deleteTimeout at most, even once ctx is cancelled:
// the Job first (so that no controller
// recreates its pods), then its pods, the PVCs of their ephemeral volumes
// (also garbage-collected with their pods) and the profile ConfigMap. It
// returns what is still left, named, when ctx ends first. notice, if set,
// is told while it waits.
func Delete(ctx context.Context, c kubernetes.Interface, ns, job string, notice func(string)) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), deleteTimeout)
	defer cancel()
	sel := metav1.ListOptions{LabelSelector: LabelName + "=" + appName + "," + LabelInstance + "=" + job}
	background := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{PropagationPolicy: &background}
	var errs []error
	keep := func(err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	keep(c.BatchV1().Jobs(ns).Delete(ctx, job, del))
	for asked := false; ; asked = true {
		left, err := leftovers(ctx, c, ns, sel)
		keep(err)
		if len(errs) > 0 {
			return fmt.Errorf("delete job/%s and its objects: %w", job, errors.Join(errs...))
		}
		if len(left) == 0 {
			return nil
		}
		if asked { // deletion takes its time: finalizers, the kubelet stopping containers
			if notice != nil {
				notice(fmt.Sprintf("waiting for %s of job/%s to go", units.Count(len(left), "object"), job))
			}
			select {
			case <-ctx.Done():
				names := make([]string, len(left))
				for i, o := range left {
					names[i] = o.kind + "/" + o.name
				}
				return fmt.Errorf("still present in namespace %s after deletion (remove with kubectl delete job,pod,pvc,configmap -n %s -l %s): %s",
					ns, ns, sel.LabelSelector, strings.Join(names, ", "))
			case <-time.After(time.Second):
			}
		}
		for _, o := range left {
			switch o.kind {
			case "pod":
				keep(c.CoreV1().Pods(ns).Delete(ctx, o.name, del))
			case "persistentvolumeclaim":
				keep(c.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, o.name, del))
			case "configmap":
				keep(c.CoreV1().ConfigMaps(ns).Delete(ctx, o.name, del))
			case "job":
				keep(c.BatchV1().Jobs(ns).Delete(ctx, o.name, del))
			}
		}
	}
}

type object struct{ kind, name string }

// leftovers lists what of the run the API still has.
func leftovers(ctx context.Context, c kubernetes.Interface, ns string, sel metav1.ListOptions) ([]object, error) {
	var left []object
	jobs, err := c.BatchV1().Jobs(ns).List(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, o := range jobs.Items {
		left = append(left, object{"job", o.Name})
	}
	pods, err := c.CoreV1().Pods(ns).List(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, o := range pods.Items {
		left = append(left, object{"pod", o.Name})
	}
	pvcs, err := c.CoreV1().PersistentVolumeClaims(ns).List(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, o := range pvcs.Items {
		left = append(left, object{"persistentvolumeclaim", o.Name})
	}
	cms, err := c.CoreV1().ConfigMaps(ns).List(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, o := range cms.Items {
		left = append(left, object{"configmap", o.Name})
	}
	return left, nil
}
