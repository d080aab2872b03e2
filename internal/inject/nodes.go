package inject

import (
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/annotations"
)

// Annotation returns one annotation of the object or pod template n.
func Annotation(n *yaml.Node, key string) (string, bool) {
	v := annotations.Node(n, key)
	if v == nil || v.Kind != yaml.ScalarNode {
		return "", false
	}
	return v.Value, true
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == yaml.NodeTagNull)
}
