package rolldiff

import (
	"bytes"
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/inject"
	"github.com/confighash/confighash/internal/yamlnode"
)

// Render is one side of a diff: the analysed stream and the content of its
// ConfigMaps and Secrets.
type Render struct {
	// Name says where the render came from (a file name, or "-").
	Name    string
	report  *inject.Report
	configs map[configRef]hashing.Content
	opts    inject.Options
}

// Report is the render-time analysis of the render: its workloads, as
// confighash reads them with the options given to Read.
func (r *Render) Report() *inject.Report { return r.report }

// configRef names one ConfigMap or Secret of a render.
type configRef struct {
	Kind      hashing.Kind
	Namespace string
	Name      string
}

func (c configRef) String() string {
	return string(c.Kind) + " " + hashing.ObjectName(c.Namespace, c.Name)
}

// Read parses a render: a plain multi-document YAML (or JSON) stream, or a
// KRM ResourceList whose items are the objects. name is used in errors.
func Read(name string, input []byte, opts inject.Options) (*Render, error) {
	nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(input), OmitReaderAnnotations: true}).Read()
	if err != nil {
		return nil, fmt.Errorf("%s: reading the render: %w", name, err)
	}
	report, err := inject.Analyze(nodes, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	r := &Render{Name: name, report: report, configs: map[configRef]hashing.Content{}, opts: opts}
	for i, n := range nodes {
		if err := r.addConfigs(n, opts.DefaultNamespace); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, i, err)
		}
	}
	return r, nil
}

// addConfigs indexes a ConfigMap or Secret, or those among a v1 List's
// items, read as the analysis reads them (inject.ReadContent), which has
// already accepted them.
func (r *Render) addConfigs(n *yaml.RNode, defaultNamespace string) error {
	y := n.YNode()
	if y.Kind != yaml.MappingNode {
		return nil
	}
	apiVersion, kind := scalar(y, "apiVersion"), scalar(y, "kind")
	if apiVersion != "v1" {
		return nil
	}
	switch kind {
	case "List", "ConfigMapList", "SecretList":
		items := yamlnode.Child(y, "items")
		if items == nil || items.Kind != yaml.SequenceNode {
			return nil
		}
		for i, it := range items.Content {
			if err := r.addConfigs(yaml.NewRNode(it), defaultNamespace); err != nil {
				return fmt.Errorf("items[%d]: %w", i, err)
			}
		}
		return nil
	case string(hashing.KindConfigMap), string(hashing.KindSecret):
	default:
		return nil
	}
	meta := yamlnode.Child(y, "metadata")
	ref := configRef{Kind: hashing.Kind(kind), Namespace: scalar(meta, "namespace"), Name: scalar(meta, "name")}
	if ref.Namespace == "" {
		ref.Namespace = defaultNamespace
	}
	c, err := inject.ReadContent(y, ref.Kind, ref.Namespace, ref.Name)
	if err != nil {
		return fmt.Errorf("%s: %w", ref, err)
	}
	if ref.Name, err = inject.FinalName(n, ref.Name); err != nil {
		return fmt.Errorf("%s: %w", ref, err)
	}
	r.configs[ref] = c
	return nil
}

func scalar(m *yaml.Node, key string) string {
	if v := yamlnode.Child(m, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}
