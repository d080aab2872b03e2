package fn_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/confighash/confighash/fn"
	"github.com/confighash/confighash/internal/inject"
)

// TestLoadConfigErrors: a functionConfig confighash cannot read as written
// is an error naming the functionConfig and the field, in the words of the
// YAML the user wrote (a list, a map), never silently ignored.
func TestLoadConfigErrors(t *testing.T) {
	const typed = "apiVersion: confighash.dev/v1alpha1\nkind: ConfigHash\nmetadata: {name: ch}\n"
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fn}\n"
	cases := []struct {
		name, config string
		// want are parts of the error, in order of appearance or not.
		want []string
	}{
		{"not an object", `"x"`, []string{"functionConfig is not an object (found a string)"}},
		{"a list", "[a]", []string{"functionConfig is not an object (found a list)"}},
		{"no apiVersion or kind", "{a: b}", []string{"functionConfig has no apiVersion and kind", "use a v1 ConfigMap or confighash.dev/v1alpha1 ConfigHash"}},
		{"kind without apiVersion", "{kind: ConfigMap, metadata: {name: m}}", []string{"functionConfig m: kind ConfigMap (no apiVersion) is not supported"}},
		{"another version", "{apiVersion: confighash.dev/v1, kind: ConfigHash, metadata: {name: m}}", []string{"functionConfig m: kind confighash.dev/v1 ConfigHash is not supported"}},
		{"typed: unknown field", typed + "annotationPrefx: example.com\n", []string{"functionConfig ch", `unknown field "annotationPrefx"`}},
		{"typed: workloads a string", typed + "workloads: Rollout\n", []string{"functionConfig ch: workloads: found a string, want a list"}},
		{"typed: a workload a string", typed + "workloads: [Rollout.argoproj.io=spec/template]\n", []string{"functionConfig ch: workloads: found a string, want an object"}},
		{"typed: a workload's kind a list", typed + "workloads: [{kind: [CloneSet], path: spec/template}]\n", []string{"functionConfig ch: workloads.kind: found a list, want a string"}},
		{"typed: prefix a list", typed + "annotationPrefix: [a]\n", []string{"functionConfig ch: annotationPrefix: found a list, want a string"}},
		{"typed: metadata a string", "apiVersion: confighash.dev/v1alpha1\nkind: ConfigHash\nmetadata: x\n", []string{"functionConfig: metadata: found a string, want an object"}},
		{"ConfigMap: workloads a list", cm + "data:\n  workloads: [CloneSet.apps.kruise.io=spec/template]\n",
			[]string{"functionConfig fn: data.workloads: found a list, want a string", "separated by commas or newlines"}},
		{"ConfigMap: namespace a map", cm + "data:\n  namespace: {name: shop}\n", []string{"functionConfig fn: data.namespace: found a map, want a string"}},
		{"ConfigMap: data a list", cm + "data: [a]\n", []string{"functionConfig fn: data: found a list, want a map"}},
		{"ConfigMap: binaryData", cm + "binaryData: {workloads: eA==}\n", []string{"functionConfig fn: unknown field \"binaryData\"", "under data"}},
		{"ConfigMap: settings beside data", cm + "namespace: shop\n", []string{"functionConfig fn: unknown field \"namespace\"", "under data"}},
		{"ConfigMap: unknown key", cm + "data: {Namespace: shop}\n", []string{"functionConfig fn: unknown data keys Namespace"}},
		{"ConfigMap: a list as a field", cm + "[data]: {namespace: shop}\n", []string{"functionConfig fn: a field is a list, not a string"}},
		{"ConfigMap: a list as a key", cm + "data: {[namespace]: shop}\n", []string{"functionConfig fn: data: a key is a list, not a string"}},
		{"ConfigMap: a map as a key", cm + "data: {? {a: b} : shop}\n", []string{"functionConfig fn: data: a key is a map, not a string"}},
		{"ConfigMap: malformed workload", cm + "data: {workloads: Rollout}\n", []string{"functionConfig fn: data.workloads: \"Rollout\": want Kind.group=path"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node, err := yaml.Parse(tc.config)
			require.NoError(t, err)
			_, err = fn.LoadConfig(node)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.NotContains(t, err.Error(), "Go struct", "no Go types in the message")
		})
	}
}

// TestLoadConfig: what each accepted functionConfig sets.
func TestLoadConfig(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fn}\n"
	cases := []struct {
		name, config string
		want         inject.Options
	}{
		{"empty", "{}", inject.Options{}},
		{"ConfigMap without data", cm, inject.Options{}},
		{"ConfigMap, data null", cm + "data: null\n", inject.Options{}},
		// kpt writes a Kptfile's configMap: values as strings; a scalar
		// written unquoted is read as its text.
		{"ConfigMap, unquoted scalars", cm + "data: {namespace: 5, annotationPrefix: ~}\n", inject.Options{DefaultNamespace: "5"}},
		{"ConfigMap, workloads in lines", cm + "data:\n  workloads: |\n    CloneSet.apps.kruise.io=spec/template\n    Worker.example.com=spec/runner/template\n",
			inject.Options{Workloads: []inject.WorkloadKind{
				{Group: "apps.kruise.io", Kind: "CloneSet", Path: "spec/template"},
				{Group: "example.com", Kind: "Worker", Path: "spec/runner/template"}}}},
		{"typed", "apiVersion: confighash.dev/v1alpha1\nkind: ConfigHash\nmetadata: {name: ch}\nannotationPrefix: x.dev\nnamespace: shop\n",
			inject.Options{Prefix: "x.dev", DefaultNamespace: "shop"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node, err := yaml.Parse(tc.config)
			require.NoError(t, err)
			got, err := fn.LoadConfig(node)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
