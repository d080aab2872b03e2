package inject

import (
	"encoding/base64"
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/hashing"
)

// readContent reads a ConfigMap's or Secret's keys straight from the node,
// with the API server's rules: string values in data and stringData, base64
// in binaryData and in a Secret's data, stringData over data. Errors name
// the field and key, never the value.
func readContent(node *yaml.RNode, o Object) (hashing.Content, error) {
	c := hashing.Content{Kind: hashing.Kind(o.Kind), Namespace: o.Namespace, Name: o.Name, Keys: map[string]hashing.Digest{}}
	var fields []contentField
	if c.Kind == hashing.KindSecret {
		fields = []contentField{{"data", true}, {"stringData", false}}
	} else {
		fields = []contentField{{"data", false}, {"binaryData", true}}
	}
	for _, f := range fields {
		if err := f.read(node, c); err != nil {
			return c, err
		}
	}
	return c, nil
}

type contentField struct {
	name   string
	base64 bool
}

func (f contentField) read(node *yaml.RNode, c hashing.Content) error {
	m := Child(node.YNode(), f.name)
	if isNull(m) {
		return nil
	}
	if m.Kind != yaml.MappingNode {
		return fmt.Errorf("%s: expected a map of strings", f.name)
	}
	seen := make(map[string]bool, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		key, value := m.Content[i].Value, m.Content[i+1]
		if seen[key] {
			return fmt.Errorf("%s: key %q appears twice", f.name, key)
		}
		seen[key] = true
		raw, err := f.value(key, value)
		if err != nil {
			return err
		}
		if _, dup := c.Keys[key]; dup && c.Kind == hashing.KindConfigMap {
			return fmt.Errorf("key %q is in both data and binaryData", key)
		}
		c.Keys[key] = hashing.DigestOf(raw)
	}
	return nil
}

func (f contentField) value(key string, v *yaml.Node) ([]byte, error) {
	if v.Kind != yaml.ScalarNode || !isStringScalar(v) {
		return nil, fmt.Errorf("%s.%s: expected a string, found %s", f.name, key, describe(v))
	}
	if !f.base64 {
		return []byte(v.Value), nil
	}
	raw, err := base64.StdEncoding.DecodeString(v.Value)
	if err != nil {
		// The message of a base64 error gives only an offset, never the data.
		return nil, fmt.Errorf("%s.%s: not valid base64: %w", f.name, key, err)
	}
	return raw, nil
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
