package fn_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/confighash/confighash/fn"
)

// TestRunResourceListShapes: ResourceLists as a hand or another tool may
// write them. Each comes back as a ResourceList holding its items, hashed,
// or is an error with nothing written; never the ResourceList itself
// written back as an item.
func TestRunResourceListShapes(t *testing.T) {
	const head = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"
	const items = "items:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: b}}\n" +
		"- {apiVersion: apps/v1, kind: Deployment, metadata: {name: w}, spec: {template: {spec: {containers: [{name: c, envFrom: [{configMapRef: {name: c}}]}]}}}}\n"
	const empty = head + "items: []\n"
	cases := []struct {
		name, input string
		// want is the whole output; hashed says the output holds the items
		// with the Deployment hashed instead.
		want   string
		hashed bool
		err    string
	}{
		{name: "no items, no functionConfig", input: head, want: empty},
		{name: "only results", input: head + "results: []\n", want: empty + "results: []\n"},
		{name: "JSON, no items", input: `{"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList"}`, want: empty},
		{name: "a trailing separator", input: head + items + "---\n", hashed: true},
		{name: "a comment, then a separator", input: "# made by hand\n---\n" + head + items, hashed: true},
		{name: "a separator first", input: "---\n" + head + items, hashed: true},
		{name: "a second document", input: head + items + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: d}\n",
			err: "2 YAML documents: a KRM function reads one ResourceList (document 1 is ConfigMap d)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := fn.Run(fn.Processor{}, bytes.NewReader([]byte(tc.input)), &out)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				assert.Empty(t, out.String(), "no partial output")
				return
			}
			require.NoError(t, err)
			got := out.String()
			assert.NotContains(t, got, "config.kubernetes.io/index", "the ResourceList is not read as an item")
			if tc.hashed {
				assert.Contains(t, got, "kind: ResourceList\nitems:\n- {apiVersion: v1, kind: ConfigMap")
				assert.Contains(t, got, "confighash.dev/hash: 'v1-sha256:")
				return
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
