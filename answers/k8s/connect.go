package k8s

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/iomatrix/iomatrix/internal/fault"
	"github.com/iomatrix/iomatrix/results"
)

// Connect reaches a cluster as kubectl does: through the kubeconfig file
// ("": $KUBECONFIG, else ~/.kube/config) and its context ("": the
// current one), else through the pod's service account inside a
// cluster. It returns the client and the namespace to use: namespace,
// else the context's, else default. A configuration that cannot work is
// bad input for "kubeconfig".
func Connect(kubeconfig, kubeContext, namespace string) (kubernetes.Interface, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	rest, err := cfg.ClientConfig()
	switch {
	case clientcmd.IsEmptyConfig(err):
		return nil, "", fault.Input("kubeconfig", "no cluster configured: no $KUBECONFIG, no ~/.kube/config, not inside a pod "+
			"(k8s manifest prints the objects without a cluster)")
	case err != nil:
		return nil, "", fault.Input("kubeconfig", "%w", err)
	}
	rest.UserAgent = "iomatrix/" + results.Version
	c, err := kubernetes.NewForConfig(rest)
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	if namespace == "" {
		if namespace, _, err = cfg.Namespace(); err != nil || namespace == "" {
			namespace = "default"
		}
	}
	return c, namespace, nil
}
