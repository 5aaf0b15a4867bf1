package k8s

import (
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// WriteYAML writes objects as one YAML stream, documents separated by
// "---", as kubectl apply -f reads them.
func WriteYAML(w io.Writer, objs []runtime.Object) error {
	for i, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			return fmt.Errorf("encode %T: %w", o, err)
		}
		if i > 0 {
			if _, err := io.WriteString(w, "---\n"); err != nil {
				return err
			}
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// WriteManifest writes the objects of the Job that Run would create, as
// YAML (WriteYAML), without asking the cluster: Spec(0).
func (o *Options) WriteManifest(w io.Writer) error {
	s, err := o.Spec(0)
	if err != nil {
		return err
	}
	return WriteYAML(w, s.Objects())
}
