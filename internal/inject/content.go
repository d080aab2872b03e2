package inject

import (
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/yamlnode"
	"github.com/confighash/confighash/internal/yamlnorm"
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
		m := yamlnode.Child(node, string(f))
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

// describe names what a content value is instead of a string, with a hint
// where quoting it makes it one.
func describe(v *yaml.Node) string {
	d := yamlnorm.Describe(v)
	if v.Kind == yaml.ScalarNode && (v.Tag == yaml.NodeTagInt || v.Tag == yaml.NodeTagFloat || v.Tag == yaml.NodeTagBool) {
		d += " (quote it)"
	}
	return d
}
