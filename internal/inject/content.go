package inject

import (
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/hashing"
	"github.com/confighash/confighash/internal/yaml11"
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
			k, v := m.Content[i], m.Content[i+1]
			key := k.Value
			if name, ok := yamlnode.NonScalar(k); ok {
				return hashing.Content{}, fmt.Errorf("%s: a key is %s, not a string: kubectl and Helm (sigs.k8s.io/yaml) refuse it", f, name)
			}
			if kind := yaml11.Key(k); kind != yaml11.String {
				return hashing.Content{}, fmt.Errorf("%s: key %q is %s to kubectl and Helm (sigs.k8s.io/yaml), which store it under another name or refuse it (quote it)", f, key, kind)
			}
			if v.Kind != yaml.ScalarNode {
				return hashing.Content{}, fmt.Errorf("%s.%s: expected a string, found %s", f, key, yamlnorm.Describe(v))
			}
			if kind := yaml11.Scalar(v); kind != yaml11.String {
				return hashing.Content{}, fmt.Errorf("%s.%s: expected a string, found %s", f, key, describe(kind))
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

// describe names what a content value is instead of a string, with a hint
// where quoting it makes it one, or where null stands for "". A plain scalar is what every reader makes
// of it (yaml11): yes, no, on and off are booleans to kubectl and Helm.
func describe(kind yaml11.Kind) string {
	switch {
	case kind.Quotable():
		return string(kind) + " (quote it)"
	case kind == yaml11.Null:
		// A chart's `key:` with no value. The hash must be of what the
		// cluster holds, and that depends on the client.
		return string(kind) + ` (write "" for an empty value: the API server stores null as "" when it creates the object, but a patch, such as kubectl apply and helm upgrade send, removes the key)`
	}
	return string(kind)
}
