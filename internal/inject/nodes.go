package inject

import (
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/annotations"
	"github.com/confighash/confighash/internal/yamlnode"
)

// Annotation returns one annotation of the object or pod template n.
func Annotation(n *yaml.Node, key string) (string, bool) {
	v := annotations.Node(n, key)
	if v == nil || v.Kind != yaml.ScalarNode {
		return "", false
	}
	return v.Value, true
}

// scalar returns the value of a scalar child, or "".
func scalar(m *yaml.Node, key string) string {
	if v := yamlnode.Child(m, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == yaml.NodeTagNull)
}
