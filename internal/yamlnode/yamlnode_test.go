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

// TestText reads the text of a scalar at a path and "" for anything else:
// what every reader of kind, name and namespace wants from a document.
func TestText(t *testing.T) {
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte("kind: ConfigMap\nmetadata:\n  name: web\n  labels: [a]\n  namespace: {a: b}\nspec: null\nn: 5\na: &x s\nr: *x\n"), &doc))
	root := doc.Content[0]
	tests := []struct {
		name string
		keys []string
		want string
	}{
		{"a top-level scalar", []string{"kind"}, "ConfigMap"},
		{"a nested scalar", []string{"metadata", "name"}, "web"},
		{"a number is its text", []string{"n"}, "5"},
		{"null is its text", []string{"spec"}, "null"},
		{"a list", []string{"metadata", "labels"}, ""},
		{"a map", []string{"metadata", "namespace"}, ""},
		{"an alias, even of a scalar", []string{"r"}, ""},
		{"the anchored scalar itself", []string{"a"}, "s"},
		{"a missing key", []string{"apiVersion"}, ""},
		{"through a scalar", []string{"kind", "name"}, ""},
		{"no keys and a map", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, yamlnode.Text(root, tt.keys...))
		})
	}
	assert.Empty(t, yamlnode.Text(nil, "kind"))
	assert.Equal(t, "web", yamlnode.Text(yamlnode.Path(root, "metadata", "name")), "no keys and a scalar")
}

// TestNonScalar names every kind of node but a scalar, whose name is the
// caller's rule ("" and false).
func TestNonScalar(t *testing.T) {
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte("a: &x s\nm: {a: b}\nl: [a]\nr: *x\ns: abc\nn: 1\n"), &doc))
	for key, want := range map[string]string{"m": "a map", "l": "a list", "r": "an alias", "s": "", "n": ""} {
		got, ok := yamlnode.NonScalar(yamlnode.Child(doc.Content[0], key))
		assert.Equal(t, want, got, "%s", key)
		assert.Equal(t, want != "", ok, "%s", key)
	}
	for what, n := range map[string]*yaml.Node{"a document": &doc, "a zero node": {}} {
		got, ok := yamlnode.NonScalar(n)
		assert.Equal(t, "nothing", got, what)
		assert.True(t, ok, what)
	}
}
