package inject

import (
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Filter writes the render-time hash on every workload's pod template and the
// list of external configs on the workload. Running it on its own output
// changes nothing.
type Filter struct {
	Options
	// Report, when set, receives the analysis of the last run.
	Report *Report
}

var _ kio.Filter = Filter{}

// Filter implements kio.Filter. Nodes that are not workloads, and workloads
// that consume nothing from the stream and carry no stale annotation, are
// returned untouched.
func (f Filter) Filter(nodes []*yaml.RNode) ([]*yaml.RNode, error) {
	r, err := Analyze(nodes, f.Options)
	if err != nil {
		return nil, err
	}
	for _, w := range r.Workloads {
		if err := Apply(w, f.Options); err != nil {
			return nil, err
		}
	}
	if f.Report != nil {
		*f.Report = *r
	}
	return nodes, nil
}

// Apply writes one workload's annotations on its nodes.
func Apply(w Workload, opts Options) error {
	if w.OptedOut || w.Template == nil {
		return nil
	}
	holder := w.HashHolder()
	if err := setOrClear(holder, opts.Annotation(HashName), w.Hash); err != nil {
		return err
	}
	if err := setOrClear(holder, opts.Annotation(KeyIDName), w.KeyID(opts)); err != nil {
		return err
	}
	return setOrClear(w.Node, opts.Annotation(ExternalName), w.ExternalValue())
}

// setOrClear sets an annotation to value, or removes it when value is empty,
// and leaves the node alone when it already says so.
func setOrClear(node *yaml.RNode, key, value string) error {
	current, has := node.GetAnnotations()[key]
	switch {
	case value == "" && has:
		if _, err := node.Pipe(yaml.ClearAnnotation(key)); err != nil {
			return err
		}
		if len(node.GetAnnotations()) == 0 {
			// Leave no empty "annotations: {}" behind.
			_, err := node.Pipe(yaml.Lookup("metadata"), yaml.FieldClearer{Name: "annotations"})
			return err
		}
	case value != "" && (!has || current != value):
		return node.PipeE(yaml.SetAnnotation(key, value))
	}
	return nil
}
