package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"

	"github.com/iomatrix/iomatrix/answers/k8s"
	"github.com/iomatrix/iomatrix/internal/units"
)

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
	c, ns, err := k8s.Connect(o.Kubeconfig, o.Context, o.Namespace)
	return c, ns, optionError(err)
}

// k8sOutput is how run and collect save and show what they collected.
type k8sOutput struct {
	OutDir string
	fleetOptions
}

func (o *k8sOutput) AddFlags(f *pflag.FlagSet) {
	f.StringVar(&o.OutDir, "out-dir", ".", "where to save each pod's results (JOB-INDEX.json) and the fleet document (JOB-fleet.json)")
	o.fleetOptions.AddFlags(f)
}

func (o *k8sOutput) check() (fleetOutput, error) {
	if fi, err := os.Stat(o.OutDir); err != nil || !fi.IsDir() {
		return fleetOutput{}, usagef("--out-dir: %s is not a directory", o.OutDir)
	}
	return o.fleetOptions.output()
}

func newK8sRunCommand(g *globalOptions) *cobra.Command {
	var (
		kube kubeOptions
		spec k8sSpecOptions
		out  k8sOutput
	)
	cmd := command("k8s-run", "run [flags] [-- SWEEP FLAGS]", "Sweep every volume of a StorageClass or every node, and report the fleet", nil,
		func(cmd *cobra.Command, args []string) error {
			return runK8sRun(cmd.Context(), g, cmd, kube, &spec, &out, args)
		})
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
	ko, err := o.options(g, cmd.Flags(), sweepArgs)
	if err != nil {
		return err
	}
	if err := ko.Validate(); err != nil { // the flags, before any contact
		return k8sError(err)
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
		count, err := k8s.CountNodes(ctx, client, o.Nodes)
		if len(count.Skipped) > 0 {
			fmt.Fprintf(g.stderr, "iomatrix: not measured: %s\n", strings.Join(count.Skipped, ", "))
		}
		if err != nil {
			return optionError(err)
		}
		nodes = count.Schedulable
	}
	ko.Namespace = ns
	s, err := ko.Spec(nodes)
	if err != nil {
		return k8sError(err)
	}
	fmt.Fprintf(g.stderr, "iomatrix: creating %s: %s of %s, %d at a time\n", s, units.Count(s.Pods, "pod"), s.Image, s.Parallel)
	defer func() {
		// Whatever happened, and after Ctrl-C too: delete what was created.
		if deleteJob(ctx, g, client, ns, s.Name) {
			fmt.Fprintf(g.stderr, "iomatrix: deleted %s and everything it created\n", s)
		}
	}()
	if err := k8s.Create(ctx, client, s); err != nil {
		return err
	}
	return gather(ctx, g, client, ns, s.Name, k8s.Found{Indexes: s.Pods, PerNode: s.PerNode}, true, fo, out.OutDir)
}

// deleteJob deletes a Job and what it created, even once ctx is
// cancelled, and says whether it did.
func deleteJob(ctx context.Context, g *globalOptions, c kubernetes.Interface, ns, job string) bool {
	if err := k8s.Delete(ctx, c, ns, job, g.stderr); err != nil {
		fmt.Fprintf(g.stderr, "iomatrix: %v\n", err)
		return false
	}
	return true
}

// gather waits for the Job, showing its pods, when wait is set; then it
// saves what each index gave and prints the report (k8s.Gather). Failed
// indexes are named with their node and reason, and make the exit status 1.
func gather(ctx context.Context, g *globalOptions, c kubernetes.Interface, ns, job string, found k8s.Found, wait bool,
	fo fleetOutput, outDir string) error {
	doc, failed, err := k8s.Gather(ctx, c, k8s.Gathering{Namespace: ns, Job: job, Found: found, Wait: wait, Poll: g.kubePoll, OutDir: outDir,
		Notice: g.notice})
	if err == nil && doc != nil {
		err = fo.write(g, doc)
	}
	if err != nil {
		return err
	}
	return failed
}

func newK8sCollectCommand(g *globalOptions) *cobra.Command {
	var (
		kube   kubeOptions
		out    k8sOutput
		noWait bool
		del    bool
	)
	cmd := command("k8s-collect", "collect JOB", "Gather the results of an iomatrix Job applied from k8s manifest", exactArgs(1),
		func(cmd *cobra.Command, args []string) error {
			return runK8sCollect(cmd.Context(), g, kube, &out, args[0], !noWait, del)
		})
	kube.AddFlags(cmd.Flags())
	out.AddFlags(cmd.Flags())
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "collect what is finished now instead of waiting for the Job to end")
	cmd.Flags().BoolVar(&del, "delete", false, "then delete the Job, its pods, their PVCs and the profile ConfigMap")
	return cmd
}

func runK8sCollect(ctx context.Context, g *globalOptions, kube kubeOptions, out *k8sOutput, job string, wait, del bool) error {
	fo, err := out.check()
	if err != nil {
		return err
	}
	client, ns, err := g.kube(kube)
	if err != nil {
		return err
	}
	found, err := k8s.Find(ctx, client, ns, job)
	if err != nil {
		return err
	}
	if del {
		defer deleteJob(ctx, g, client, ns, job)
	}
	return gather(ctx, g, client, ns, job, found, wait, fo, out.OutDir)
}
