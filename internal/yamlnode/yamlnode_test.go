package yamlnode_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"

	"github.com/confighash/confighash/internal/yamlnode"
)

func TestPath(t *testing.T) {
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte("metadata:\n  name: web\n  labels: [a]\nspec: null\n"), &doc))
	root := doc.Content[0]
	tests := []struct {
		name string
		keys []string
		want string // "" for nil
	}{
		{"no keys is the node", nil, "!!map"},
		{"a mapping's value", []string{"metadata", "name"}, "web"},
		{"a missing key", []string{"metadata", "namespace"}, ""},
		{"through a list", []string{"metadata", "labels", "a"}, ""},
		{"through a scalar", []string{"spec", "template"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := yamlnode.Path(root, tt.keys...)
			if tt.want == "" {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			if got.Kind == yaml.MappingNode {
				assert.Equal(t, tt.want, got.Tag)
			} else {
				assert.Equal(t, tt.want, got.Value)
			}
		})
	}
	assert.Nil(t, yamlnode.Child(nil, "x"))
}

// TestNonScalar names every kind of node but a scalar, whose name is the
// caller's rule.
func TestNonScalar(t *testing.T) {
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte("m: {a: b}\nl: [a]\na: &x s\nr: *x\ns: text\nn: 1\n"), &doc))
	root := doc.Content[0]
	tests := []struct {
		name string
		node *yaml.Node
		want string
		ok   bool
	}{
		{"a mapping", yamlnode.Child(root, "m"), "a map", true},
		{"a sequence", yamlnode.Child(root, "l"), "a list", true},
		{"an alias", yamlnode.Child(root, "r"), "an alias", true},
		{"a document", &doc, "nothing", true},
		{"a zero node", &yaml.Node{}, "nothing", true},
		{"a string scalar", yamlnode.Child(root, "s"), "", false},
		{"a number scalar", yamlnode.Child(root, "n"), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NotNil(t, tt.node)
			got, ok := yamlnode.NonScalar(tt.node)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}
