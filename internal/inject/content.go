package inject

import (
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/hashing"
)

// ReadContent reads the content of a ConfigMap's or Secret's document:
// each key of its content fields goes to hashing.ContentBuilder, which
// holds the API server's rules; this reader checks what only a YAML tree
// can tell, that each field is a map and each value a string. Errors name
// the field and key, never the value.
func ReadContent(node *yaml.Node, kind hashing.Kind, namespace, name string) (hashing.Content, error) {
	var b hashing.ContentBuilder
	b.Reset(kind)
	for _, f := range kind.Fields() {
		m := Child(node, string(f))
		if isNull(m) {
			continue
		}
		if m.Kind != yaml.MappingNode {
			return hashing.Content{}, fmt.Errorf("%s: expected a map of strings", f)
		}
		for i := 0; i+1 < len(m.Content); i += 2 {
			key, v := m.Content[i].Value, m.Content[i+1]
			if v.Kind != yaml.ScalarNode || !isStringScalar(v) {
				return hashing.Content{}, fmt.Errorf("%s.%s: expected a string, found %s", f, key, describe(v))
			}
			if err := b.AddString(f, key, v.Value); err != nil {
				return hashing.Content{}, err
			}
		}
	}
	c := b.Done()
	c.Namespace, c.Name = namespace, name
	return c, nil
}

// isStringScalar reports whether a scalar reads as a string in JSON terms:
// quoted, a block scalar, or a plain scalar YAML resolves to a string.
func isStringScalar(v *yaml.Node) bool {
	if v.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return true
	}
	return v.Tag == "" || v.Tag == yaml.NodeTagString || v.Tag == "!!binary"
}

func describe(v *yaml.Node) string {
	switch v.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch v.Tag {
	case yaml.NodeTagNull:
		return "null"
	case yaml.NodeTagInt, yaml.NodeTagFloat:
		return "a number (quote it)"
	case yaml.NodeTagBool:
		return "a boolean (quote it)"
	}
	return "a " + v.Tag
}
