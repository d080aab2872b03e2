package inject

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/yamlnode"
)

// podSpec reads the parts of a pod template's spec that reference config
// objects (volumes, image pull secrets, and each container's env and
// envFrom) into a corev1.PodSpec, straight from the nodes (specReader).
func podSpec(template *yaml.RNode) (*corev1.PodSpec, error) {
	n := yamlnode.Child(template.YNode(), "spec")
	if isNull(n) {
		return &corev1.PodSpec{}, nil
	}
	if resolve(n).Kind != yaml.MappingNode {
		return nil, errors.New("expected an object")
	}
	return readPodSpec(n)
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}
