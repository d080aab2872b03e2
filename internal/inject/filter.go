package inject

import (
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/annotations"
	"github.com/confighash/confighash/internal/yamlnode"
)

// Filter writes the render-time hash on every workload's pod template and the
// list of external configs on the workload, and takes them off a workload
// that opts out. Running it on its own output changes nothing.
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

// Apply writes one workload's annotations on its nodes, and clears them
// from a workload that opts out (see Holders).
func Apply(w Workload, opts Options) error {
	hashOn, externalOn := w.Holders(opts)
	if hashOn != nil {
		if err := setOrClear(hashOn, opts.Annotation(HashName), w.Hash); err != nil {
			return err
		}
		if err := setOrClear(hashOn, opts.Annotation(KeyIDName), w.KeyID(opts)); err != nil {
			return err
		}
	}
	if externalOn == nil {
		return nil
	}
	return setOrClear(externalOn, opts.Annotation(ExternalName), w.ExternalValue())
}

// Holders returns the nodes whose annotations Apply writes: the hash and key
// id's (HashHolder) and the external list's (the workload); none for a
// workload without a pod template.
//
// A workload that opts out gets none of them, but an earlier run of
// confighash (in a kustomize base, an earlier render stage) may have
// written them before the opt-out, and they would still roll its pods:
// Holders then returns where they are, for Apply to clear (its Hash and
// External are empty), and none when it carries none, so that such a
// workload is left as written. hash is nil when only the external list is
// there. A stale hash on a Job's pod template is left alone: the API server
// refuses any change of a Job's pod template.
func (w Workload) Holders(opts Options) (hash, external *yaml.RNode) {
	if !w.OptedOut {
		if w.Template == nil {
			return nil, nil
		}
		return w.HashHolder(), w.Node
	}
	hash = w.Node
	if !w.TemplateImmutable() {
		hash = nil
		if path, ok := opts.templatePath(w.group(), w.Kind); ok {
			if tn := yamlnode.Path(w.Node.YNode(), path...); tn != nil && tn.Kind == yaml.MappingNode {
				hash = yaml.NewRNode(tn)
			}
		}
	}
	if hash != nil && !carries(hash, opts, HashName, KeyIDName) {
		hash = nil
	}
	if hash == nil && !carries(w.Node, opts, ExternalName) {
		return nil, nil
	}
	return hash, w.Node
}

// carries reports whether an object's annotations hold any of the named
// ones, whatever their values.
func carries(n *yaml.RNode, opts Options, names ...string) bool {
	for _, name := range names {
		if annotations.Node(n.YNode(), opts.Annotation(name)) != nil {
			return true
		}
	}
	return false
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
		at := fieldIndex(node.YNode(), "metadata")
		if err := node.PipeE(yaml.SetAnnotation(key, value)); err != nil {
			return err
		}
		moveField(node.YNode(), "metadata", max(at, 0))
	}
	return nil
}

// fieldIndex is the position of key among the fields of mapping n, -1
// when it has no such field.
func fieldIndex(n *yaml.Node, key string) int {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return i / 2
		}
	}
	return -1
}

// moveField moves the field key of mapping n to position at. kyaml's
// SetAnnotation drops an empty metadata and appends the one it makes after
// the other fields: of a pod template without metadata (as Job templates
// are often written), after its spec. The metadata goes back where it was,
// or first, where people and kubectl write it and the stream mode adds it;
// kpt writes the function's output back to the package's files.
func moveField(n *yaml.Node, key string, at int) {
	from := fieldIndex(n, key)
	if from < 0 || from == at || at >= len(n.Content)/2 {
		return
	}
	pair := []*yaml.Node{n.Content[2*from], n.Content[2*from+1]}
	rest := append(append([]*yaml.Node(nil), n.Content[:2*from]...), n.Content[2*from+2:]...)
	n.Content = append(append(append([]*yaml.Node(nil), rest[:2*at]...), pair...), rest[2*at:]...)
}
