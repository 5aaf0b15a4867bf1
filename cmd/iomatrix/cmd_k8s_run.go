package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"

	"github.com/iomatrix/iomatrix/answers/k8s"
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

// kubeClient connects as kubectl would (k8s.Connect): the client and the
// namespace to use.
func kubeClient(o kubeOptions) (kubernetes.Interface, string, error) {
	return k8s.Connect(o.Kubeconfig, o.Context, o.Namespace)
}

// clusterOptions are the flags of run and collect: the cluster, where to
// save what they gather and how to report it.
type clusterOptions struct {
	kube kubeOptions
	k8s.Gathering
}

func (o *clusterOptions) AddFlags(f *pflag.FlagSet) {
	o.kube.AddFlags(f)
	f.StringVar(&o.OutDir, "out-dir", ".", "where to save each pod's results (JOB-INDEX.json) and the fleet document (JOB-fleet.json)")
	fleetFlags(f, &o.Report)
}

// gathering is the flags' k8s.Gathering, reaching the cluster through
// g.kube.
func (o *clusterOptions) gathering(g *globalOptions) k8s.Gathering {
	k := o.Gathering
	k.Connect = func() (kubernetes.Interface, string, error) { return g.kube(o.kube) }
	k.Stdout, k.Poll, k.Notice = g.stdout, g.kubePoll, g.notice
	return k
}

func newK8sRunCommand(g *globalOptions) *cobra.Command {
	var (
		cluster clusterOptions
		spec    k8sSpecOptions
	)
	cmd := command("k8s-run", "run [flags] [-- SWEEP FLAGS]", "Sweep every volume of a StorageClass or every node, and report the fleet", nil,
		func(cmd *cobra.Command, args []string) error {
			ko, err := spec.options(g, cmd, args)
			if err != nil {
				return err
			}
			return k8s.Run(cmd.Context(), cluster.gathering(g), ko)
		})
	cluster.AddFlags(cmd.Flags())
	spec.AddFlags(cmd.Flags())
	return cmd
}

func newK8sCollectCommand(g *globalOptions) *cobra.Command {
	var (
		cluster clusterOptions
		noWait  bool
		del     bool
	)
	cmd := command("k8s-collect", "collect JOB", "Gather the results of an iomatrix Job applied from k8s manifest", exactArgs(1),
		func(cmd *cobra.Command, args []string) error {
			return k8s.CollectJob(cmd.Context(), cluster.gathering(g), args[0], !noWait, del)
		})
	cluster.AddFlags(cmd.Flags())
	cmd.Flags().BoolVar(&noWait, "no-wait", false, "collect what is finished now instead of waiting for the Job to end")
	cmd.Flags().BoolVar(&del, "delete", false, "then delete the Job, its pods, their PVCs and the profile ConfigMap")
	return cmd
}
