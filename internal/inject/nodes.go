package inject

import "sigs.k8s.io/kustomize/kyaml/yaml"

// These read yaml.Node trees directly: the RNode helpers allocate a wrapper
// per field visited, which on a large stream costs more than the hashing.

// Child returns the value of key in mapping m, or nil.
func Child(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// Path follows keys from n, or returns nil.
func Path(n *yaml.Node, keys ...string) *yaml.Node {
	for _, k := range keys {
		if n = Child(n, k); n == nil {
			return nil
		}
	}
	return n
}

// Annotation returns one annotation of the object or pod template n.
func Annotation(n *yaml.Node, key string) (string, bool) {
	v := Path(n, "metadata", "annotations", key)
	if v == nil || v.Kind != yaml.ScalarNode {
		return "", false
	}
	return v.Value, true
}

// scalar returns the value of a scalar child, or "".
func scalar(m *yaml.Node, key string) string {
	if v := Child(m, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == yaml.NodeTagNull)
}
