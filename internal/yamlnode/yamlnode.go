// Package yamlnode reads yaml.v3 node trees directly (kyaml's yaml.Node is
// the same type): kyaml's RNode helpers allocate a wrapper per field
// visited, which on a large stream costs more than the hashing. It imports
// no kyaml, so the controller's side may use it too.
package yamlnode

import yaml "go.yaml.in/yaml/v3"

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

// Text follows keys from n and returns the text of the scalar there, or ""
// where the path is missing or ends on a map, a list or an alias. A null is
// its text ("null", "~" or ""), as yaml wrote it.
func Text(n *yaml.Node, keys ...string) string {
	if n = Path(n, keys...); n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}

// NonScalar names node n for error messages when it is no scalar: "a map",
// "a list", "an alias", or "nothing" for a document or an empty node. For a
// scalar it returns ok false: what a scalar is depends on the reader's rule
// (its tag to yamlnorm, yaml11's to the annotations), which the caller
// names.
func NonScalar(n *yaml.Node) (name string, ok bool) {
	switch n.Kind {
	case yaml.ScalarNode:
		return "", false
	case yaml.MappingNode:
		return "a map", true
	case yaml.SequenceNode:
		return "a list", true
	case yaml.AliasNode:
		return "an alias", true
	}
	return "nothing", true
}
