package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/iomatrix/iomatrix/internal/units"
	"github.com/iomatrix/iomatrix/k8s"
	"github.com/iomatrix/iomatrix/profiles"
	"github.com/iomatrix/iomatrix/report"
	"github.com/iomatrix/iomatrix/results"
)

// defaultImage is what the podman build of docs/fleets.md tags.
var defaultImage = "localhost/iomatrix:" + results.Version

// kubeOptions are the flags that reach a cluster.
type kubeOptions struct {
	Kubeconfig string
	Context    string
	Namespace  string
}

func (o *kubeOptions) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the pod's service account inside a cluster)")
	f.StringVar(&o.Context, "context", "", "kubeconfig context (default: the current one)")
	f.StringVarP(&o.Namespace, "namespace", "n", "", "namespace (default: the context's, else default)")
}

// kubeClient connects as kubectl would: kubeconfig, else in-cluster. It
// returns the client and the namespace to use.
func kubeClient(o kubeOptions) (kubernetes.Interface, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.Kubeconfig
	cfg := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.Context})
	rest, err := cfg.ClientConfig()
	switch {
	case clientcmd.IsEmptyConfig(err):
		return nil, "", usagef("--kubeconfig: no cluster configured: no $KUBECONFIG, no ~/.kube/config, not inside a pod " +
			"(k8s manifest prints the objects without a cluster)")
	case err != nil:
		return nil, "", usagef("--kubeconfig: %w", err)
	}
	rest.UserAgent = "iomatrix/" + results.Version
	c, err := kubernetes.NewForConfig(rest)
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	ns := o.Namespace
	if ns == "" {
		if ns, _, err = cfg.Namespace(); err != nil || ns == "" {
			ns = "default"
		}
	}
	return c, ns, nil
}

func newK8sCommand(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "k8s",
		Short: "Sweep every volume of a StorageClass, or every node, as a Kubernetes Job",
		Long: `Run sweeps on Kubernetes: one Indexed Job whose pods each run
iomatrix sweep on their own volume or node, then one results file per pod
and a fleet report (see iomatrix merge).

  k8s run       create the Job, follow it, collect, report, delete it
  k8s manifest  print the same objects as YAML, for GitOps
  k8s collect   gather the results of such a Job once it ran

The pods run the image built from the Containerfile (see docs/fleets.md):
non-root, no privilege escalation, all capabilities dropped, seccomp
RuntimeDefault, which passes the PodSecurity restricted profile (a
--host-path volume does not: hostPath is refused from baseline up).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newK8sRunCommand(g), newK8sManifestCommand(g), newK8sCollectCommand(g))
	return cmd
}

// k8sSpecOptions are the flags that decide the Job: shared by run and
// manifest.
type k8sSpecOptions struct {
	Name         string
	Image        string
	Profile      string
	Pods         int
	Parallel     int
	StorageClass string
	Size         string
	Block        bool
	Nodes        string
	HostPath     string
	Privileged   bool
	Cap          string
	BackoffLimit int32
	TTL          time.Duration
}

func (o *k8sSpecOptions) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.Name, "name", "", "name of the Job and label of everything it creates (default: iomatrix-YYYYMMDD-HHMMSS)")
	f.StringVar(&o.Image, "image", defaultImage, "the iomatrix image, built from the Containerfile and pushed where the nodes can pull it")
	f.StringVarP(&o.Profile, "profile", "p", profiles.DefaultName, "built-in profile name, or a YAML file (shipped to the pods in a ConfigMap)")
	f.IntVar(&o.Pods, "pods", 0, "volumes to measure, one pod each (default 1); with --nodes, manifest needs it as the number of nodes")
	f.IntVar(&o.Parallel, "parallel", 0, "pods at a time (default: 1 for volumes, which may share a backend; all for nodes)")
	f.StringVar(&o.StorageClass, "storage-class", "", "StorageClass of each pod's generic ephemeral volume (default: the cluster's default class)")
	f.StringVar(&o.Size, "size", "16GiB", "size of each pod's volume (16GiB or 16Gi); the test file fills 90 % of it")
	f.BoolVar(&o.Block, "block", false, "a raw block volume (volumeMode Block), measured as a device: its data is overwritten")
	f.StringVar(&o.Nodes, "nodes", "", "one pod per node: all, or a label selector (e.g. node-role.kubernetes.io/storage=true)")
	f.StringVar(&o.HostPath, "host-path", "", "with --nodes: measure this directory of each node instead of an ephemeral volume")
	f.BoolVar(&o.Privileged, "privileged", false, "run the pods as root, privileged, with the host's cgroup tree: what --cap needs")
	f.StringVar(&o.Cap, "cap", "", "run each sweep under these I/O limits (see iomatrix sweep --cap); needs --privileged")
	f.Int32Var(&o.BackoffLimit, "backoff-limit-per-index", 1, "retries of a failed pod, per index (exit status 2, bad input, is never retried)")
	durationVar(f, &o.TTL, "ttl", 24*time.Hour, "the cluster deletes the finished Job after this long (ttlSecondsAfterFinished), if nothing else did")
}

const nodesUnknown = -1

// sweepOwnFlags are the sweep flags that k8s sets itself.
var sweepOwnFlags = []string{"profile", "format", "frame", "out", "resume", "help"}

// spec checks the flags and the sweep flags after "--", and builds the
// Job's spec. nodes is the number of nodes selected: 0 when the cluster is
// not asked (manifest), nodesUnknown before it is (run's first check).
func (o *k8sSpecOptions) spec(g *globalOptions, f *pflag.FlagSet, sweepArgs []string, ns string, nodes int) (*k8s.Spec, error) {
	s := &k8s.Spec{Name: o.Name, Namespace: ns, Image: o.Image, Profile: o.Profile, StorageClass: o.StorageClass,
		Block: o.Block, HostPath: o.HostPath, Privileged: o.Privileged, BackoffLimitPerIndex: o.BackoffLimit, TTL: o.TTL}
	if s.Name == "" {
		s.Name = "iomatrix-" + time.Now().UTC().Format("20060102-150405")
	}
	if errs := validation.IsDNS1123Label(s.Name); len(errs) > 0 || len(s.Name) > 50 {
		return nil, usagef("--name: %q is not a Job name: lower-case letters, digits and '-', at most 50 characters", s.Name)
	}
	if o.Image == "" {
		return nil, usagef("--image: empty")
	}
	if err := o.checkProfile(s); err != nil {
		return nil, err
	}
	if err := o.checkPlacement(f, s, nodes); err != nil {
		return nil, err
	}
	if o.BackoffLimit < 0 {
		return nil, usagef("--backoff-limit-per-index: %d must not be negative", o.BackoffLimit)
	}
	if o.TTL < time.Minute {
		return nil, usagef("--ttl: %s is too short: the finished Job, and its pods' logs, would go before they are collected (1m at least)", o.TTL)
	}
	args, err := checkSweepArgs(g, sweepArgs)
	if err != nil {
		return nil, err
	}
	if o.Cap != "" {
		args = append(args, "--cap", o.Cap)
	}
	if !o.Privileged && (slices.ContainsFunc(args, isFlag("cap")) || slices.ContainsFunc(args, isFlag("cgroup"))) {
		return nil, usagef("--cap: a cap inside a pod needs root, privilege and the host's cgroup tree: add --privileged " +
			"(the pods then leave the PodSecurity restricted profile)")
	}
	if o.Block {
		args = append(args, "--allow-destructive")
	}
	s.SweepArgs = args
	return s, nil
}

func isFlag(name string) func(string) bool {
	return func(a string) bool { return a == "--"+name || strings.HasPrefix(a, "--"+name+"=") }
}

func (o *k8sSpecOptions) checkProfile(s *k8s.Spec) error {
	p, err := profiles.Load(o.Profile)
	if err != nil {
		return usagef("--profile: %w", err)
	}
	if p.Source != "built-in" {
		data, err := os.ReadFile(o.Profile)
		if err != nil {
			return usagef("--profile: %w", err)
		}
		s.Profile, s.ProfileYAML = "", data
	}
	return nil
}

// checkPlacement decides volumes or nodes, and the pod counts.
func (o *k8sSpecOptions) checkPlacement(f *pflag.FlagSet, s *k8s.Spec, nodes int) error {
	if o.Pods < 0 {
		return usagef("--pods: %d must be positive", o.Pods)
	}
	if o.Parallel < 0 {
		return usagef("--parallel: %d must be positive", o.Parallel)
	}
	size, err := units.ParseSize(o.Size)
	if q, qerr := resource.ParseQuantity(o.Size); err != nil && qerr == nil {
		size, err = q.Value(), nil // Kubernetes' own spelling: 16Gi
	}
	if err != nil || size < 64<<20 {
		return usagef("--size: %q is not a volume size of 64MiB or more (e.g. 16GiB)", o.Size)
	}
	s.VolumeSize = *resource.NewQuantity(size, resource.BinarySI)
	if o.HostPath != "" {
		if o.Nodes == "" {
			return usagef("--host-path: only applies with --nodes (one pod per node)")
		}
		if !filepath.IsAbs(o.HostPath) {
			return usagef("--host-path: %q is not an absolute path", o.HostPath)
		}
		for _, name := range []string{"storage-class", "size", "block"} {
			if f.Changed(name) {
				return usagef("--%s: does not apply with --host-path (the node's directory is measured)", name)
			}
		}
	} else if !o.Block {
		s.FileSize = strconv.FormatInt(size/10*9>>20, 10) + "MiB"
	}
	s.Pods, s.Parallel = max(o.Pods, 1), max(o.Parallel, 0)
	if o.Nodes == "" {
		if s.Parallel == 0 {
			s.Parallel = 1
		}
		s.Parallel = min(s.Parallel, s.Pods)
		return nil
	}
	s.PerNode = true
	if o.Nodes != "all" {
		req, err := nodeRequirements(o.Nodes)
		if err != nil {
			return usagef("--nodes: %w", err)
		}
		s.NodeSelector = req
	}
	switch {
	case nodes == nodesUnknown:
	case nodes > 0:
		if o.Pods > 0 && o.Pods != nodes {
			return usagef("--pods: %d given, but --nodes %s selects %d schedulable nodes", o.Pods, o.Nodes, nodes)
		}
		s.Pods = nodes
	case o.Pods == 0:
		return usagef("--pods: manifest does not contact the cluster: give the number of nodes that --nodes %s selects", o.Nodes)
	}
	if s.Parallel == 0 {
		s.Parallel = s.Pods
	}
	s.Parallel = min(s.Parallel, s.Pods)
	return nil
}

// nodeRequirements turns a label selector into node affinity terms.
func nodeRequirements(sel string) ([]corev1.NodeSelectorRequirement, error) {
	parsed, err := labels.Parse(sel)
	if err != nil {
		return nil, err
	}
	reqs, _ := parsed.Requirements()
	if len(reqs) == 0 {
		return nil, fmt.Errorf("%q selects nothing; use all for every node", sel)
	}
	ops := map[selection.Operator]corev1.NodeSelectorOperator{
		selection.Equals: corev1.NodeSelectorOpIn, selection.DoubleEquals: corev1.NodeSelectorOpIn, selection.In: corev1.NodeSelectorOpIn,
		selection.NotEquals: corev1.NodeSelectorOpNotIn, selection.NotIn: corev1.NodeSelectorOpNotIn,
		selection.Exists: corev1.NodeSelectorOpExists, selection.DoesNotExist: corev1.NodeSelectorOpDoesNotExist,
		selection.GreaterThan: corev1.NodeSelectorOpGt, selection.LessThan: corev1.NodeSelectorOpLt,
	}
	out := make([]corev1.NodeSelectorRequirement, len(reqs))
	for i, r := range reqs {
		out[i] = corev1.NodeSelectorRequirement{Key: r.Key(), Operator: ops[r.Operator()], Values: r.Values().List()}
	}
	return out, nil
}

// checkSweepArgs parses the flags meant for the pods' sweep as sweep
// would, so that a typo fails here, before anything is created.
func checkSweepArgs(g *globalOptions, args []string) ([]string, error) {
	sweep := newSweepCommand(g)
	f := sweep.Flags()
	f.SetNormalizeFunc(fioNames)
	if err := f.Parse(args); err != nil {
		return nil, usagef("after --: %w (these flags go to iomatrix sweep)", err)
	}
	if f.NArg() > 0 {
		return nil, usagef("after --: %q: the pods' target is their volume, give only sweep flags", f.Args())
	}
	for _, name := range sweepOwnFlags {
		if f.Changed(name) {
			return nil, usagef("after --: --%s is set by iomatrix k8s itself", name)
		}
	}
	return args, nil
}

// k8sOutput is how run and collect save and show what they collected.
type k8sOutput struct {
	OutDir  string
	Format  string
	Metric  string
	Outlier string
}

func (o *k8sOutput) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.OutDir, "out-dir", ".", "where to save each pod's results (JOB-INDEX.json) and the fleet document (JOB-fleet.json)")
	f.StringVar(&o.Format, "format", "text", "fleet report on stdout: text, markdown, csv, json, html")
	f.StringVar(&o.Metric, "metric", "iops", "cell value and deviation: iops, mibps, lat-mean, lat-p50, lat-p99, lat-p99.9")
	f.StringVar(&o.Outlier, "outlier", "10%", "flag a member whose figures are this far below the fleet median (above, for latency)")
}

func (o *k8sOutput) check() (fleetOutput, error) {
	if fi, err := os.Stat(o.OutDir); err != nil || !fi.IsDir() {
		return fleetOutput{}, usagef("--out-dir: %s is not a directory", o.OutDir)
	}
	return newFleetOutput(o.Format, o.Metric, o.Outlier)
}

func newK8sRunCommand(g *globalOptions) *cobra.Command {
	var (
		kube kubeOptions
		spec k8sSpecOptions
		out  k8sOutput
	)
	cmd := &cobra.Command{
		Use:   "run [flags] [-- SWEEP FLAGS]",
		Short: "Sweep every volume of a StorageClass or every node, and report the fleet",
		Long: `Create one Indexed Job whose pods each run iomatrix sweep with the given
profile, follow it (pods pending, running, done, and each pod's last
finished pattern), read each pod's results document from its log, save
one results file per pod and a fleet document, delete everything it
created (Job, pods, the PVCs of their volumes, the profile's ConfigMap) —
on success, failure and Ctrl-C — and print the fleet report.

Volumes (--storage-class, --size, --pods N): each pod gets its own
generic ephemeral volume, so its PVC lives and dies with the pod. They run
one at a time unless --parallel says otherwise: volumes of one class often
share a backend (a SAN, a Ceph pool, a cloud account's throughput), and
pods measured together would measure each other.

Nodes (--nodes all|SELECTOR): one pod per schedulable node, each on its
own node (required pod anti-affinity and a topology spread on the host
name), measuring an ephemeral volume or --host-path. They run all at once:
nodes share nothing, and with fewer at a time the one-per-node placement
rests on the scheduler counting finished pods.

Flags after -- go to iomatrix sweep in every pod (e.g. -- --runtime 30s).
The container runtimes' default seccomp profiles block io_uring, so under
the restricted profile the pods measure with the psync engine (recorded
in each result).
A pod that fails is retried --backoff-limit-per-index times, then
reported with its node and reason; the other pods' results are kept and
the exit status is 1.

` + exitStatusHelp,
		Example: `  iomatrix k8s run --image registry.example.com/iomatrix:0.1.0 --storage-class gp3 --pods 3 --profile quick
  iomatrix k8s run --nodes all --host-path /var/lib/iomatrix --profile quick -- --runtime auto
  iomatrix k8s run --nodes node-role.kubernetes.io/storage --storage-class local-path --out-dir results/`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runK8sRun(cmd.Context(), g, cmd, kube, &spec, &out, args)
		},
	}
	kube.AddFlags(cmd.Flags())
	spec.AddFlags(cmd.Flags())
	out.AddFlags(cmd.Flags())
	return cmd
}

func runK8sRun(ctx context.Context, g *globalOptions, cmd *cobra.Command, kube kubeOptions, o *k8sSpecOptions, out *k8sOutput, args []string) error {
	sweepArgs, err := argsAfterDash(cmd, args)
	if err != nil {
		return err
	}
	if _, err := o.spec(g, cmd.Flags(), sweepArgs, "", nodesUnknown); err != nil { // the flags, before any contact
		return err
	}
	fo, err := out.check()
	if err != nil {
		return err
	}
	client, ns, err := g.kube(kube)
	if err != nil {
		return err
	}
	nodes := 0
	if o.Nodes != "" {
		if nodes, err = countNodes(ctx, g, client, o.Nodes); err != nil {
			return err
		}
	}
	s, err := o.spec(g, cmd.Flags(), sweepArgs, ns, nodes)
	if err != nil {
		return err
	}
	fmt.Fprintf(g.stderr, "iomatrix: creating %s: %s of %s, %d at a time\n", s, units.Count(s.Pods, "pod"), s.Image, s.Parallel)
	defer func() {
		// Whatever happened, and after Ctrl-C too: delete what was created.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if err := k8s.Delete(dctx, client, ns, s.Name, g.stderr); err != nil {
			fmt.Fprintf(g.stderr, "iomatrix: %v\n", err)
			return
		}
		fmt.Fprintf(g.stderr, "iomatrix: deleted %s and everything it created\n", s)
	}()
	if err := k8s.Create(ctx, client, s); err != nil {
		return err
	}
	return followAndCollect(ctx, g, client, ns, s.Name, s.Pods, s.PerNode, fo, out.OutDir)
}

// argsAfterDash returns what follows "--" on the command line.
func argsAfterDash(cmd *cobra.Command, args []string) ([]string, error) {
	at := cmd.ArgsLenAtDash()
	if at < 0 {
		if len(args) > 0 {
			return nil, usagef("%s takes no argument (%q); sweep flags go after --", cmd.CommandPath(), args)
		}
		return nil, nil
	}
	if at > 0 {
		return nil, usagef("%s takes no argument (%q); sweep flags go after --", cmd.CommandPath(), args[:at])
	}
	return args, nil
}

// countNodes counts the schedulable nodes a --nodes value selects, naming
// the ones left out.
func countNodes(ctx context.Context, g *globalOptions, c kubernetes.Interface, sel string) (int, error) {
	opts := metav1.ListOptions{}
	if sel != "all" {
		opts.LabelSelector = sel
	}
	list, err := c.CoreV1().Nodes().List(ctx, opts)
	if err != nil {
		return 0, fmt.Errorf("list nodes: %w", err)
	}
	n := 0
	var skipped []string
	for _, node := range list.Items {
		if why := unschedulable(&node); why != "" {
			skipped = append(skipped, node.Name+" ("+why+")")
			continue
		}
		n++
	}
	if len(skipped) > 0 {
		fmt.Fprintf(g.stderr, "iomatrix: not measured: %s\n", strings.Join(skipped, ", "))
	}
	if n == 0 {
		return 0, usagef("--nodes: %q selects no schedulable node (of %d)", sel, len(list.Items))
	}
	return n, nil
}

func unschedulable(n *corev1.Node) string {
	if n.Spec.Unschedulable {
		return "cordoned"
	}
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			return "taint " + t.Key + ":" + string(t.Effect)
		}
	}
	return ""
}

// followAndCollect waits for the Job, showing its pods, then saves and
// reports what each index gave.
func followAndCollect(ctx context.Context, g *globalOptions, c kubernetes.Interface, ns, job string, indexes int, perNode bool,
	fo fleetOutput, outDir string) error {
	last := ""
	w := &k8s.Watcher{Client: c, Namespace: ns, Job: job, Poll: g.kubePoll, Status: func(st k8s.Status) {
		if line := statusLine(job, st); line != last {
			fmt.Fprintln(g.stderr, line)
			last = line
		}
	}}
	if err := w.Wait(ctx); err != nil {
		return err
	}
	members, err := k8s.Collect(ctx, c, ns, job, indexes)
	if err != nil {
		return err
	}
	return saveMembers(g, members, job, perNode, fo, outDir)
}

// statusLine is one line of a Job's progress.
func statusLine(job string, st k8s.Status) string {
	var b strings.Builder
	fmt.Fprintf(&b, "iomatrix: job/%s: %s", job, st.Count())
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

// saveMembers saves each index's document and the fleet document, and
// prints the report; failed indexes are named with their node and
// reason, and make the exit status 1.
func saveMembers(g *globalOptions, members []k8s.Member, job string, perNode bool, fo fleetOutput, outDir string) error {
	var in []report.MemberInput
	failed := 0
	for _, m := range members {
		if m.Document == nil {
			failed++
			where := ""
			if m.Pod != "" {
				where = fmt.Sprintf(" (pod %s on node %s, %s)", m.Pod, orUnknown(m.Node), units.Count(m.Attempts, "attempt"))
			}
			fmt.Fprintf(g.stderr, "iomatrix: index %d%s failed: %s\n", m.Index, where, m.Failure)
			continue
		}
		path := filepath.Join(outDir, fmt.Sprintf("%s-%d.json", job, m.Index))
		if err := results.WriteFileAtomic(path, m.Document); err != nil {
			return err
		}
		fmt.Fprintf(g.stderr, "iomatrix: index %d (node %s): %s saved to %s\n", m.Index, orUnknown(m.Node),
			units.Count(len(m.Document.Results), "result"), path)
		label := fmt.Sprintf("vol-%d@%s", m.Index, orUnknown(m.Node))
		if perNode {
			label = orUnknown(m.Node)
		}
		in = append(in, report.MemberInput{Doc: m.Document, Source: path, Label: label})
	}
	var err error
	switch len(in) {
	case 0:
		return fmt.Errorf("job/%s: no pod gave results (%d failed)", job, failed)
	case 1:
		err = fo.write(g, in[0].Doc)
	default:
		var fleet *results.Document
		if fleet, err = report.Merge(in); err != nil {
			return err
		}
		path := filepath.Join(outDir, job+"-fleet.json")
		if err := results.WriteFileAtomic(path, fleet); err != nil {
			return err
		}
		fmt.Fprintf(g.stderr, "iomatrix: fleet of %s saved to %s\n", units.Count(len(in), "member"), path)
		err = fo.write(g, fleet)
	}
	if err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("job/%s: %d of %d indexes failed; the others' results are kept", job, failed, len(members))
	}
	return nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func newK8sManifestCommand(g *globalOptions) *cobra.Command {
	var spec k8sSpecOptions
	var namespace string
	cmd := &cobra.Command{
		Use:   "manifest [flags] [-- SWEEP FLAGS]",
		Short: "Print the Job that k8s run would create, as YAML",
		Long: `Print the objects that iomatrix k8s run would create, as YAML for kubectl
apply or a GitOps repository: the Indexed Job, and the ConfigMap holding a
profile file. It contacts no cluster, so --nodes needs --pods, the number
of nodes it selects. Gather the results with iomatrix k8s collect JOB once
the Job ran; ttlSecondsAfterFinished (--ttl) leaves that much time.

` + exitStatusHelp,
		Example: `  iomatrix k8s manifest --storage-class standard --pods 3 --profile quick
  iomatrix k8s manifest --nodes all --pods 12 --host-path /var/lib/iomatrix --name disks -n bench > job.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			sweepArgs, err := argsAfterDash(cmd, args)
			if err != nil {
				return err
			}
			s, err := spec.spec(g, cmd.Flags(), sweepArgs, namespace, 0)
			if err != nil {
				return err
			}
			return k8s.WriteYAML(g.stdout, s.Objects())
		},
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace of the objects (default: none, kubectl apply decides)")
	spec.AddFlags(cmd.Flags())
	return cmd
}

func newK8sCollectCommand(g *globalOptions) *cobra.Command {
	var (
		kube   kubeOptions
		out    k8sOutput
		noWait bool
		del    bool
	)
	cmd := &cobra.Command{
		Use:   "collect JOB",
		Short: "Gather the results of an iomatrix Job applied from k8s manifest",
		Long: `Wait for an iomatrix Job (from iomatrix k8s manifest, applied any way) to
finish, read each pod's results document from its log, save one results
file per index and a fleet document, and print the fleet report. Pod logs
go when their pods go: collect before ttlSecondsAfterFinished deletes the
Job. --delete then deletes the Job and what it created.

` + exitStatusHelp,
		Example: `  kubectl apply -f job.yaml && iomatrix k8s collect disks -n bench --delete`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runK8sCollect(cmd.Context(), g, kube, &out, args[0], !noWait, del)
		},
	}
	kube.AddFlags(cmd.Flags())
	out.AddFlags(cmd.Flags())
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "collect what is finished now instead of waiting for the Job to end")
	cmd.Flags().BoolVar(&del, "delete", false, "then delete the Job, its pods, their PVCs and the profile ConfigMap")
	return cmd
}

// ErrNotIomatrixJob is returned by collect for a Job that iomatrix did
// not make.
var ErrNotIomatrixJob = errors.New("not an iomatrix Job")

func runK8sCollect(ctx context.Context, g *globalOptions, kube kubeOptions, out *k8sOutput, job string, wait, del bool) error {
	fo, err := out.check()
	if err != nil {
		return err
	}
	client, ns, err := g.kube(kube)
	if err != nil {
		return err
	}
	j, err := client.BatchV1().Jobs(ns).Get(ctx, job, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get job/%s in namespace %s: %w", job, ns, err)
	}
	if j.Labels[k8s.LabelName] != "iomatrix" || j.Spec.Completions == nil ||
		j.Spec.CompletionMode == nil || *j.Spec.CompletionMode != batchv1.IndexedCompletion {
		return usageError{fmt.Errorf("job/%s: %w (made by iomatrix k8s manifest or run)", job, ErrNotIomatrixJob)}
	}
	if del {
		defer func() {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			defer cancel()
			if err := k8s.Delete(dctx, client, ns, job, g.stderr); err != nil {
				fmt.Fprintf(g.stderr, "iomatrix: %v\n", err)
			}
		}()
	}
	indexes := int(*j.Spec.Completions)
	perNode := j.Spec.Template.Spec.Affinity != nil && j.Spec.Template.Spec.Affinity.PodAntiAffinity != nil
	if !wait {
		members, err := k8s.Collect(ctx, client, ns, job, indexes)
		if err != nil {
			return err
		}
		return saveMembers(g, members, job, perNode, fo, out.OutDir)
	}
	return followAndCollect(ctx, g, client, ns, job, indexes, perNode, fo, out.OutDir)
}
