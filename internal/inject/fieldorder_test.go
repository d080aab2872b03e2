package inject

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/kio"
)

// TestHashKeepsFieldOrder: kyaml, setting the hash, drops an empty metadata
// and appends the one it makes after the other fields; kpt writes the output
// back to the package's files. The pod template's metadata goes where it was,
// or first (as stream mode adds it); every other field keeps its place.
func TestHashKeepsFieldOrder(t *testing.T) {
	const (
		cm   = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {k: v}\n---\n"
		spec = "spec:\n        containers:\n        - {name: c, envFrom: [{configMapRef: {name: cfg}}]}\n"
	)
	deployment := func(template string) string {
		return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: 1\n  template:\n" + template
	}
	cases := []struct {
		name, template string
		want           []string // the template's fields after the run
	}{
		{name: "no metadata: first", template: "      " + spec, want: []string{"metadata", "spec"}},
		{name: "no metadata, other fields after the spec: first",
			template: "      " + spec + "      x-note: kept\n", want: []string{"metadata", "spec", "x-note"}},
		{name: "empty metadata after the spec: where it was",
			template: "      " + spec + "      metadata: {}\n", want: []string{"spec", "metadata"}},
		{name: "null metadata first: first", template: "      metadata:\n      " + spec, want: []string{"metadata", "spec"}},
		{name: "metadata with labels after the spec: where it was",
			template: "      " + spec + "      metadata:\n        labels: {a: b}\n", want: []string{"spec", "metadata"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nodes, err := kio.FromBytes([]byte(cm + deployment(tc.template)))
			require.NoError(t, err)
			_, err = Filter{}.Filter(nodes)
			require.NoError(t, err)
			tpl := nodes[1].Field("spec").Value.Field("template").Value
			fields, err := tpl.Fields()
			require.NoError(t, err)
			assert.Equal(t, tc.want, fields)
			specFields, err := nodes[1].Field("spec").Value.Fields()
			require.NoError(t, err)
			assert.Equal(t, []string{"replicas", "template"}, specFields)
			out, err := nodes[1].String()
			require.NoError(t, err)
			assert.Contains(t, out, "confighash.dev/hash:")
			assert.True(t, strings.HasPrefix(out, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n"), out)
		})
	}
}
