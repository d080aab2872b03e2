package fn

import (
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/internal/yamlnode"
	"github.com/confighash/confighash/internal/yamlnorm"
)

// checkResourceList parses a ResourceList and makes it read as kubectl and the
// API server would read its items: items must be a list of objects, a key
// written twice in one mapping is an error naming the item, and anchors,
// aliases and merge keys are expanded (alias bombs refused). It returns the
// ResourceList's root mapping, expanded in place, and whether there was
// anything to expand.
func checkResourceList(input []byte) (*yaml.Node, bool, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(input, &doc); err != nil {
		return nil, false, fmt.Errorf("reading the ResourceList: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, false, errors.New("the ResourceList is not an object")
	}
	root := doc.Content[0]
	changed := false
	if items := yamlnode.Child(root, "items"); items != nil && (items.Kind != yaml.ScalarNode || items.Tag != yaml.NodeTagNull) {
		if items.Kind != yaml.SequenceNode {
			return nil, false, fmt.Errorf("the ResourceList's items is not a list (found %s)", yamlnorm.Describe(items))
		}
		for i, it := range items.Content {
			if it.Kind == yaml.AliasNode && it.Alias != nil {
				it = it.Alias
			}
			if it.Kind != yaml.MappingNode {
				return nil, false, fmt.Errorf("ResourceList items[%d] is not an object (found %s)", i, yamlnorm.Describe(it))
			}
			name := strings.TrimSpace(valueOf(yamlnode.Child(it, "kind")) + " " + valueOf(yamlnode.Path(it, "metadata", "name")))
			r, err := yamlnorm.Normalise(it)
			if err != nil {
				return nil, false, fmt.Errorf("ResourceList items[%d] (%s): %w", i, name, err)
			}
			changed = changed || r != nil
		}
	}
	r, err := yamlnorm.Normalise(root)
	if err != nil {
		return nil, false, fmt.Errorf("the ResourceList: %w", err)
	}
	return root, changed || r != nil, nil
}

func valueOf(n *yaml.Node) string {
	if n == nil {
		return ""
	}
	return n.Value
}
