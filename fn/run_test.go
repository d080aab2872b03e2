package fn_test

import (
	"bytes"
	"strings"
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

// TestRunAsGenerator: kustomize runs a function listed under generators:
// with its own functionConfig, marked local-config, as the only item. That
// is a warning saying to list it under transformers:; the item comes back
// as it came.
func TestRunAsGenerator(t *testing.T) {
	const fc = "apiVersion: confighash.dev/v1alpha1\nkind: ConfigHash\nmetadata:\n  name: confighash\n"
	const item = "- apiVersion: confighash.dev/v1alpha1\n  kind: ConfigHash\n  metadata:\n    name: confighash\n" +
		"    annotations:\n      config.kubernetes.io/local-config: 'true'\n"
	const head = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"
	functionConfig := "functionConfig:\n" + indent(fc)
	cases := []struct {
		name, input string
		warned      bool
	}{
		{"the functionConfig alone, as generators: get it", head + "items:\n" + item + functionConfig, true},
		{"no items", head + "items: []\n" + functionConfig, false},
		{"another object", head + "items:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n" + functionConfig, false},
		{"the functionConfig among other objects (kpt's --fn-config in the package)",
			head + "items:\n" + item + "- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n" + functionConfig, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			results, err := fn.Run(fn.Processor{}, bytes.NewReader([]byte(tc.input)), &out)
			require.NoError(t, err)
			if !tc.warned {
				assert.Empty(t, results)
				return
			}
			require.Len(t, results, 1)
			assert.Equal(t, fn.Warning, results[0].Severity)
			assert.Contains(t, results[0].Message, "list it under transformers:")
			assert.Equal(t, "ConfigHash", results[0].ResourceRef.Kind)
			assert.Contains(t, out.String(), "results:\n- message: 'received no resources")
			assert.Contains(t, out.String(), "items:\n"+item)
		})
	}
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n  ") + "\n"
}
